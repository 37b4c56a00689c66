# serverbench: `make bench` runs the default matrix, `make test` the tests.
# Both install what is missing first (scripts/install, idempotent).
VENV := .venv
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: install install-test bench test lint report clean

install:
	scripts/install

# The tests run the Docker backend too, so they install Debian's engine (not started).
install-test:
	scripts/install --docker

bench: install
	snakemake --cores 4

test: install-test
	python -m pytest -ra --durations=15

lint: install
	ruff check workflow tests benchmarks apps
	ruff format --check workflow tests benchmarks apps
	snakefmt --check Snakefile workflow/rules
	snakemake --lint

report: install
	snakemake --report report.zip

clean:
	rm -rf results report.zip .snakemake
