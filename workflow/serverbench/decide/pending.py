"""A timed comparison on its way to its outcome (the verdicts' work in progress): apart from
``decide.judgement``, the comparison's shape, which loads no statistics."""

from __future__ import annotations

from dataclasses import dataclass, replace

from serverbench.decide.inference import Estimate
from serverbench.decide.judgement import TimedComparison


@dataclass
class Pending:
    """A timed comparison on its way: the frozen comparison as far as it is made (each stage
    replaces it with the next: estimated, Holm's level set, decided), and the estimates that
    will give its interval beside it: the one it is decided on and the delivered req/s one."""

    comparison: TimedComparison
    estimate: Estimate | None = None
    delivered: Estimate | None = None

    def update(self, **fields) -> None:
        self.comparison = replace(self.comparison, **fields)
