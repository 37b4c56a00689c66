"""The words of an HTTP check's outcome (a probe's, a framing case's, conformance.csv's
``outcome``): members written into a result and conformance.csv as their words, and read back
from them as the same members."""

from __future__ import annotations

from enum import StrEnum


class CheckOutcome(StrEnum):
    """How a server did on one check."""

    PASS = "pass"  # it did what the RFC (or the check) asks
    WARN = "warn"  # safe, but not what it should do (a 400 owed, a SHOULD not followed)
    FAIL = "fail"  # it broke what the check asks (or could not be probed)
    INFO = "info"  # what it did, with nothing asked of it (a MAY, its Server header, a linter's note)
