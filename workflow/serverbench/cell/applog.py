"""What went wrong in the app, read from the server's log: the last error a Python
traceback or a Perl ``die`` left there, as file, line and message, so that an app that
fails to import or compile, a missing callable or a ``.psgi`` that dies is reported with
where it broke rather than only as a server that did not answer."""

from __future__ import annotations

import re
from pathlib import Path

TAIL_BYTES = 64 * 1024  # the log's end: the last error is there
# A traceback's frame, e.g.   File "/srv/shop/wsgi.py", line 3, in <module>
_PYTHON_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)')
# An exception's line after a traceback, e.g. NameError: name 'x' is not defined
_PYTHON_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)|[\w.]+Error)(?::\s*(.*))?$")
# Perl's die/compile messages, e.g. syntax error at /srv/app.psgi line 4, near "x"
_PERL_AT = re.compile(r"^(.*?) at (\S+) line (\d+)\b")


def last_error(text: str) -> dict | None:
    """The last error in a log: {"file", "line", "message"}, or None without one."""
    lines = text.splitlines()
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index].strip()
        exception = _PYTHON_EXCEPTION.match(line)
        if exception:
            frame = next((m for m in map(_PYTHON_FRAME.match, reversed(lines[:index])) if m), None)
            if frame:
                return {"file": frame[1], "line": int(frame[2]), "message": line}
        perl = _PERL_AT.match(line)
        if perl and perl[1]:
            return {"file": perl[2], "line": int(perl[3]), "message": line}
    return None


def read_last_error(log_path: Path) -> dict | None:
    try:
        with open(log_path, "rb") as log:
            log.seek(0, 2)
            log.seek(max(0, log.tell() - TAIL_BYTES))
            return last_error(log.read().decode(errors="replace"))
    except OSError:
        return None


def in_words(error: dict | None) -> str:
    """The error as the end of a failure's reason ('' without one)."""
    return (
        f"; the server's log ends on an error at {error['file']} line {error['line']}: {error['message']}"
        if error
        else ""
    )
