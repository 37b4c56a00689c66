"""The hello app with one whole-heap collection in each worker's life: gc.collect() on
the worker's COLLECT_AT-th request (SERVERBENCH_COLLECT_AT, 200 unless set). With the
work lens's lives of 50 and 350 requests (and a warm-up of at most 80 a worker) the
longer life's serving worker collects once and the shorter's never: a collection in
one life and not in the other, as a Python worker's clock-driven ones fall
(tests/test_work.py). With SERVERBENCH_COLLECT_ONCE (a path) only the first worker to
get there collects, and leaves that file behind: the first pair of lives is unbalanced,
the next ones are not (under valgrind only: perf's lives, first, are left alone)."""

import gc
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "python"))
from hello import application as hello  # noqa: E402

COLLECT_AT = int(os.environ.get("SERVERBENCH_COLLECT_AT", "200"))
COLLECT_ONCE = os.environ.get("SERVERBENCH_COLLECT_ONCE")
UNDER_VALGRIND = "vgpreload" in os.environ.get("LD_PRELOAD", "")
# A heap worth collecting: cycles the collector must walk (kept, so each collection walks them).
_HEAP = [[index] for index in range(200_000)]
for _first, _second in zip(_HEAP, _HEAP[1:], strict=False):
    _first.append(_second)
    _second.append(_first)
# Frozen: the worker's own collections, which come by the clock, never walk it (a twin that
# never collects once had one walk it in its longer life); only the planted one does.
gc.freeze()
_served = 0


def application(environ, start_response):
    global _served
    _served += 1
    # Collecting once: perf's lives are spared, and every life after the first collection.
    spared = COLLECT_ONCE and (not UNDER_VALGRIND or os.path.exists(COLLECT_ONCE))
    if _served == COLLECT_AT and not spared:
        if COLLECT_ONCE:
            open(COLLECT_ONCE, "w").close()
        gc.unfreeze()
        gc.collect()
    return hello(environ, start_response)
