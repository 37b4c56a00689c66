"""A small HTTP/1.1 server (keep-alive) whose reload, on SIGHUP, is chosen:

    python reloading.py PORT graceful|drop|die

graceful: it keeps serving every connection; drop: it closes its listening socket
and every open connection, stays away 0.5 s, then listens again (what a server
that restarts abruptly does to its clients); die: it exits. It is tinyserve
(tests/apps/tinyserve), the server tests/test_releases.py builds as releases.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tinyserve"))

from tinyserve import run  # noqa: E402

if __name__ == "__main__":
    run("127.0.0.1", int(sys.argv[1]), sys.argv[2])
