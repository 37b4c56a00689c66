# serverbench: `make bench` runs the default matrix, `make test` the tests.
# Both install what is missing first (scripts/install, idempotent).
VENV := .venv
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# NGINX Unit is built from a source tarball (scripts/install --unit): the one
# named by UNIT_SOURCE, else the vendored copy beside the clone where there is one.
UNIT_SOURCE ?= $(wildcard $(CURDIR)/../shared/vendor/unit-1.35.0.tar.gz)
export UNIT_SOURCE

.PHONY: install install-test bench test test-quick lint report docs clean

install:
	scripts/install --unit

# The tests run the Docker backend too, so they install Debian's engine (not
# started) and Debian's Slurm (not started: tests/test_slurm.py starts a
# one-node cluster with scripts/one-node-slurm and stops it); Unit, whose tests fail rather than skip under make test;
# and oha (a run whose profiles load with it builds it itself: rule program_install).
install-test:
	scripts/install --docker --slurm --unit --oha

bench: install
	snakemake --cores 4

# SERVERBENCH_MAKE_TEST: a program the install put in place is never a reason to skip.
# The tests that count (answers, instructions, processes, files) run two at a time, a test
# file to a worker (pytest-xdist); then the ones marked serial, which time what they test
# against a figure measured beside it, run alone: the 2 CPUs are their experiment.
# The paired set starts the files that took longest last time first (tests/conftest.py).
# Both sets always run; the target fails if either did.
test: install-test
	SERVERBENCH_MAKE_TEST=1 python -m pytest -ra -m "not serial" -n 2 --dist loadfile --no-loadscope-reorder --durations=20 \
		--junitxml=.test-times-paired.xml; paired=$$?; \
	SERVERBENCH_MAKE_TEST=1 python -m pytest -ra -m serial --durations=20 --junitxml=.test-times-serial.xml; \
	serial=$$?; test $$paired -eq 0 && test $$serial -eq 0

# The edit-run loop: the unit tests and one tiny workflow run (the toy lens), under 5 minutes
# (the modules marked quick); make test before a commit lands.
test-quick: install-test
	SERVERBENCH_MAKE_TEST=1 python -m pytest -ra -m quick --durations=10

lint: install
	ruff check workflow tests benchmarks apps
	ruff format --check workflow tests benchmarks apps
	snakefmt --check Snakefile workflow/rules workflow/serverbench/lenses
	snakemake --lint

report: install
	snakemake --report report.zip

# The figures the docs quote, written from docs/data/ (tests/test_docs.py fails on a stale one).
docs: install
	serverbench docs

clean:
	rm -rf results report.zip .snakemake
