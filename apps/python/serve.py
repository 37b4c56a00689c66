"""Serves a WSGI app with a server library that has no command line of its own.

bjoern, meinheld, tornado's WSGIContainer, fastwsgi, pyruvate and flup are
libraries: this gives each the same command line as the servers that have
one, so the catalogue can describe them as plain argv:

    python serve.py bjoern --host 127.0.0.1 --port 8000 --workers 2 \
        --app apps/python/hello.py:application

Single-threaded event-loop servers (bjoern, meinheld, fastwsgi, tornado) get
``--workers`` processes by forking after the socket is bound, as their
documentation suggests; pyruvate takes a worker count itself.
"""

import argparse
import ctypes
import importlib.util
import os
import signal


def load_app(spec: str):
    path, _, name = spec.rpartition(":")
    module_spec = importlib.util.spec_from_file_location("served_app", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, name or "application")


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def fork_workers(count: int) -> None:
    """Fork ``count - 1`` children, each sent SIGTERM by the kernel when the parent ends.

    The servers forked here loop in C (libev, libuv) and never return to Python, so a
    Python handler of SIGTERM would never run: the parent keeps the default action (it
    ends at once) and the kernel passes the signal on (PR_SET_PDEATHSIG). With a
    handler, bjoern's parent ignored SIGTERM until it was killed."""
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()
    for _ in range(count - 1):
        pid = os.fork()
        if pid == 0:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
            if os.getppid() != parent:  # the parent ended before the line above
                os._exit(0)
            return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def serve_bjoern(app, args):
    import bjoern

    bjoern.listen(app, args.host, args.port)
    fork_workers(args.workers)
    bjoern.run()


def serve_meinheld(app, args):
    from meinheld import server

    server.listen((args.host, args.port))
    server.set_backlog(args.backlog)
    # meinheld closes after each answer unless keep-alive is switched on.
    server.set_keepalive(10)
    fork_workers(args.workers)
    server.run(app)


def serve_tornado(app, args):
    import tornado.httpserver
    import tornado.ioloop
    import tornado.netutil
    import tornado.process
    import tornado.wsgi

    sockets = tornado.netutil.bind_sockets(args.port, address=args.host, backlog=args.backlog)
    if args.workers > 1:
        tornado.process.fork_processes(args.workers)
    container = tornado.wsgi.WSGIContainer(app)
    server = tornado.httpserver.HTTPServer(container)
    server.add_sockets(sockets)
    tornado.ioloop.IOLoop.current().start()


def serve_fastwsgi(app, args):
    import fastwsgi

    fastwsgi.server.backlog = args.backlog
    fastwsgi.run(wsgi_app=app, host=args.host, port=args.port)


def serve_pyruvate(app, args):
    import pyruvate

    # As its documentation shows. Raising max_reuse_count (a u8) made kept-alive
    # connections stall here (10 req/s), so pyruvate runs with its defaults.
    pyruvate.serve(app, f"{args.host}:{args.port}", args.workers)


def serve_flup(app, args):
    from flup.server.fcgi import WSGIServer

    if not args.socket:
        raise SystemExit("flup needs --socket PATH (a FastCGI Unix socket for the front server)")
    # The front's workers run as another user: they must be able to connect.
    WSGIServer(app, bindAddress=args.socket, umask=0o000).run()


SERVERS = {
    "bjoern": serve_bjoern,
    "meinheld": serve_meinheld,
    "tornado": serve_tornado,
    "fastwsgi": serve_fastwsgi,
    "pyruvate": serve_pyruvate,
    "flup": serve_flup,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("server", choices=sorted(SERVERS))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int)
    parser.add_argument("--socket", help="Unix socket path (FastCGI servers)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--backlog", type=int, default=1024)
    parser.add_argument("--app", required=True, help="path/to/file.py:callable")
    args = parser.parse_args(argv)
    SERVERS[args.server](load_app(args.app), args)


if __name__ == "__main__":
    main()
