"""The hello apps: WSGI conformance, PSGI conformance (prove + Plack::Test),
and byte-identical answers across languages."""

import io
import json
import re
import subprocess
import sys
import time
import warnings
import wsgiref.util
import wsgiref.validate

import pytest
from conftest import missing, require
from serverbench import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "apps" / "python"))
import hello  # noqa: E402

PATHS = ["/", "/json", "/big", "/cpu", "/sleep"]
TIMED = ["/hang?s=0.01", "/spin?s=0.01"]  # their seconds asked, short


def wsgi_answer(path: str, query: str = ""):
    """Status, headers and body of the WSGI app under wsgiref.validate."""
    captured = {}

    def start_response(status, headers, exc_info=None):
        captured.update(status=status, headers=headers)
        return lambda data: None

    environ = {}
    wsgiref.util.setup_testing_defaults(environ)
    environ.update(PATH_INFO=path, QUERY_STRING=query)
    with warnings.catch_warnings():
        warnings.simplefilter("error", wsgiref.validate.WSGIWarning)
        body = wsgiref.validate.validator(hello.application)(environ, start_response)
        data = b"".join(body)
        body.close()
    return captured["status"], dict(captured["headers"]), data


@pytest.mark.parametrize("path", PATHS)
def test_wsgi_app_passes_wsgiref_validate(path):
    status, headers, body = wsgi_answer(path)
    assert status == "200 OK"
    assert headers["Content-Length"] == str(len(body))
    if path in ("/", "/sleep"):
        assert body == b"Hello World!"


def test_the_conformance_paths_echo_and_lint():
    """POST /echo returns the body (with a length, and chunked: no CONTENT_LENGTH);
    /lint is the hello world under wsgiref.validate, which the app applies itself."""
    for length in ("5", None):
        environ = {}
        wsgiref.util.setup_testing_defaults(environ)
        environ.update(PATH_INFO="/echo", REQUEST_METHOD="POST", **{"wsgi.input": io.BytesIO(b"hello")})
        if length:
            environ["CONTENT_LENGTH"] = length
        statuses = []
        body = b"".join(hello.application(environ, lambda status, headers, seen=statuses: seen.append(status)))
        assert (statuses, body) == (["200 OK"], b"hello")
    status, headers, body = wsgi_answer("/lint")
    assert (status, body) == ("200 OK", b"Hello World!")
    # The validator really is in the way: an environ without SERVER_NAME (which PEP 3333
    # requires) is refused.
    environ = {}
    wsgiref.util.setup_testing_defaults(environ)
    environ.update(PATH_INFO="/lint", QUERY_STRING="")
    del environ["SERVER_NAME"]
    with pytest.raises(AssertionError):
        hello.application(environ, lambda status, headers: None)
    # Without SCRIPT_NAME (PEP 3333: may be omitted when empty) the validator, which would crash
    # on it (KeyError while formatting a message), judges the rest; the answer names what was left out.
    del environ["SCRIPT_NAME"]
    environ["SERVER_NAME"] = "localhost"
    seen = {}
    answer = hello.application(environ, lambda status, headers: seen.update(status=status, headers=headers))
    body = b"".join(answer)
    answer.close()  # PEP 3333: the server closes what it iterated (the validator checks it)
    assert (seen["status"], body) == ("200 OK", b"Hello World!")
    headers = dict(seen["headers"])
    note = headers["X-Serverbench-Lint-Note"]
    assert note.startswith("SCRIPT_NAME absent; PEP 3333") and "may be omitted" in note
    assert headers["X-Serverbench-Lint-Outcome"] == "info"


def test_workload_answers_are_what_they_say():
    assert len(wsgi_answer("/big")[2]) == 100 * 1024
    assert json.loads(wsgi_answer("/json")[2])["numbers"] == [1, 2, 3]
    assert len(wsgi_answer("/cpu")[2]) == 64


def test_hang_sleeps_and_spin_keeps_the_cpu_busy_for_the_seconds_asked():
    """The overload lens's hung and spinning requests: each answers hello world after ``?s=``
    seconds, /hang asleep (next to no CPU time), /spin on the CPU (seconds of CPU time: a sleep
    would spend none)."""
    for path, busy in (("/hang", False), ("/spin", True)):
        started, cpu = time.monotonic(), time.thread_time()
        status, _, body = wsgi_answer(path, "s=0.3")
        took, spent = time.monotonic() - started, time.thread_time() - cpu
        assert (status, body) == ("200 OK", b"Hello World!")
        assert took >= 0.3
        assert (spent >= 0.3) if busy else (spent < 0.1), (path, spent)
    assert hello.HANG_S >= 3600  # unless told, longer than every server's and client's timeout


def test_python_and_perl_answer_byte_for_byte_alike():
    require("perl", "plackup")
    code = (
        "use Plack::Util; use Plack::Middleware::Lint; use Plack::Test; use HTTP::Request::Common; use JSON::PP;"
        "my $app = Plack::Middleware::Lint->wrap(Plack::Util::load_psgi(shift)); my %out;"
        "test_psgi $app, sub { my $cb = shift; for my $p (@ARGV) { my $r = $cb->(GET $p);"
        "$out{$p} = [$r->code, scalar $r->header('Content-Type'), unpack('H*', $r->content)] } };"
        "print encode_json(\\%out)"
    )
    done = subprocess.run(
        ["perl", "-e", code, str(REPO_ROOT / "apps/perl/hello.psgi"), *PATHS, "/lint", *TIMED],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    perl = json.loads(done.stdout)
    for path in [*PATHS, "/lint", *TIMED]:
        status, headers, body = wsgi_answer(*path.split("?"))
        assert perl[path] == [int(status.split()[0]), headers["Content-Type"], body.hex()], path


# What `prove -v` prints for a skip, which it still counts a PASS: a whole file skipped
# (`plan skip_all`, reported as "FILE .. skipped: REASON") and one test's TAP skip directive.
SKIPPED_FILE = re.compile(r"^(\S+\.t) \.+ skipped: (.*)$", re.MULTILINE)
SKIPPED_TEST = re.compile(r"^ok \d+ # skip (.*)$", re.MULTILINE | re.IGNORECASE)


def prove_skips(verbose_output: str) -> list[str]:
    """Each skip in a `prove -v` run's output, with its reason."""
    files = [f"{name} skipped: {reason}" for name, reason in SKIPPED_FILE.findall(verbose_output)]
    return files + [f"a test skipped: {reason}" for reason in SKIPPED_TEST.findall(verbose_output)]


def test_psgi_app_with_prove():
    require("prove", "plackup")
    done = subprocess.run(["prove", "-v", "tests/perl"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Result: PASS" in done.stdout
    # A skipped .t passes prove: what it needs (its Perl modules, from envs/apt.txt) is named.
    if skips := prove_skips(done.stdout):
        missing("; ".join(skips))


def test_psgi_passes_plack_lint():
    require("perl", "plackup")
    code = (
        "use Plack::Util; use Plack::Middleware::Lint; use Plack::Test; use HTTP::Request::Common;"
        "my $app = Plack::Middleware::Lint->wrap(Plack::Util::load_psgi(shift));"
        "test_psgi $app, sub { my $r = shift->(GET '/'); print $r->code, ' ', $r->content };"
    )
    done = subprocess.run(
        ["perl", "-e", code, str(REPO_ROOT / "apps/perl/hello.psgi")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "200 Hello World!"


# A process's resident memory, read from /proc in the process itself (kB).
PY_RSS = "int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0])"
PL_RSS = "sub rss { open my $s, '<', '/proc/self/status'; local $/; (<$s> =~ /VmRSS:\\s+(\\d+)/)[0] }"


def test_large_is_held_only_by_a_worker_that_answered_it():
    """/large is 8 MiB in both languages, the same bytes; a process that loaded the app holds it
    only once it has answered /large (its resident memory grows by the 8 MiB then): a body held
    from the app's load was 8 MiB of every worker in every lens's memory figures."""
    require("perl", "plackup")
    python = (
        f"import sys, hashlib, wsgiref.util; sys.path.insert(0, sys.argv[1]); import hello; before = {PY_RSS}\n"
        "env = {}; wsgiref.util.setup_testing_defaults(env); env['PATH_INFO'] = '/large'\n"
        "body = b''.join(hello.application(env, lambda *a: None))\n"
        f"print({PY_RSS} - before, len(body), hashlib.sha256(body).hexdigest())"
    )
    perl = (
        f"use Plack::Util; use Digest::SHA qw(sha256_hex); {PL_RSS}"
        "my $app = Plack::Util::load_psgi(shift); my $before = rss();"
        "my $res = $app->({REQUEST_METHOD => 'GET', PATH_INFO => '/large', 'psgi.input' => undef});"
        "my $grew = rss() - $before; my $body = join '', @{$res->[2]};"  # the join copies: read before it
        "print $grew, ' ', length($body), ' ', sha256_hex($body)"
    )
    answers = [
        subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout.split()
        for argv in (
            [sys.executable, "-c", python, str(REPO_ROOT / "apps" / "python")],
            ["perl", "-e", perl, str(REPO_ROOT / "apps" / "perl" / "hello.psgi")],
        )
    ]
    (py_grew, py_length, py_digest), (pl_grew, pl_length, pl_digest) = answers
    assert int(py_length) == int(pl_length) == 8 * 1024 * 1024 and py_digest == pl_digest
    assert int(py_grew) >= 8 * 1024 and int(pl_grew) >= 8 * 1024, answers
