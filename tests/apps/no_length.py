"""The hello world with no Content-Length: the server decides how the answer ends."""


def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"Hello World!"]
