"""The hello apps: WSGI conformance, PSGI conformance (prove + Plack::Test),
and byte-identical answers across languages."""

import subprocess
import sys
import warnings
import wsgiref.util
import wsgiref.validate

from conftest import require
from serverbench import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "apps" / "python"))
import hello  # noqa: E402


def test_wsgi_app_passes_wsgiref_validate():
    captured = {}

    def start_response(status, headers, exc_info=None):
        captured.update(status=status, headers=headers)
        return lambda data: None

    environ = {}
    wsgiref.util.setup_testing_defaults(environ)
    environ["QUERY_STRING"] = ""
    warnings.simplefilter("error", wsgiref.validate.WSGIWarning)
    app = wsgiref.validate.validator(hello.application)
    body = app(environ, start_response)
    data = b"".join(body)
    body.close()
    assert captured["status"] == "200 OK"
    assert data == b"Hello World!"
    assert ("Content-Length", "12") in captured["headers"]


def test_psgi_app_with_prove():
    require("prove", "plackup")
    done = subprocess.run(["prove", "-v", "tests/perl"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Result: PASS" in done.stdout


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
