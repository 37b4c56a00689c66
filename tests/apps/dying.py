"""The hello app in a worker that is killed mid-life (as by the OOM killer or an operator's
kill -9): on its DIE_AT-th request (SERVERBENCH_DIE_AT, 150 unless set) a worker running
under valgrind sends itself SIGKILL, so callgrind writes nothing for it. With the work
lens's lives of 50 and 350 requests (and a warm-up of at most 80 a worker) only the longer
valgrind life's serving worker gets there, whatever the machine's speed; perf's lives, not
under valgrind, are left alone (tests/test_work.py)."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "python"))
from hello import application as hello  # noqa: E402

DIE_AT = int(os.environ.get("SERVERBENCH_DIE_AT", "150"))
UNDER_VALGRIND = "vgpreload" in os.environ.get("LD_PRELOAD", "")
_served = 0


def application(environ, start_response):
    global _served
    _served += 1
    if UNDER_VALGRIND and _served == DIE_AT:
        os.kill(os.getpid(), signal.SIGKILL)
    return hello(environ, start_response)
