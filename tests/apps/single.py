"""A single-process threaded WSGI server for fault tests: when its app calls
os._exit, the whole server is gone (no master to restart it).

    python single.py PORT module:callable
"""

import importlib
import sys
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


class Threaded(ThreadingMixIn, WSGIServer):
    daemon_threads = True


if __name__ == "__main__":
    port, target = int(sys.argv[1]), sys.argv[2]
    module, _, name = target.partition(":")
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    app = getattr(importlib.import_module(module), name)
    make_server("127.0.0.1", port, app, server_class=Threaded, handler_class=Quiet).serve_forever()
