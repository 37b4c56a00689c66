"""The hello-world WSGI application every Python server is measured with.

The body is fixed bytes with an explicit Content-Length so that every server
can keep the connection alive and answers compare byte for byte with the PSGI
app in ``apps/perl/hello.psgi``.
"""

BODY = b"Hello World!"
HEADERS = [("Content-Type", "text/plain"), ("Content-Length", str(len(BODY)))]


def application(environ, start_response):
    start_response("200 OK", list(HEADERS))
    return [BODY]
