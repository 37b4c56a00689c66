"""Which balancer idle timeout is safe for this server? A balancer's idle pool swept around each
server's keep-alive, bare, at a raised keep-alive and behind its front (docs/front.md, "The
balancer's idle pool"). A lens of its own, not a job of the front lens: a lens has one measuring
job, and the front lens's settings enter its timed cells' conditions digest, which these must not."""

from pathlib import Path

from serverbench.lens import (
    Check,
    Inputs,
    Layout,
    Lens,
    MeasureJob,
    Place,
    Section,
    TableJob,
    Words,
    deferred,
    per_server,
)
from serverbench.lenses.idlepool.settings import IdlePoolSettings
from serverbench.lenses.idlepool.words import IdlePoolKind, IdlePoolMetric
from serverbench.plan.fronts import is_fronted

(idle_pool_section,) = deferred(f"{__name__}.report", "idle_pool_section")
PROFILE_KEY = "idle_pool"

# What it offers to releases and bisect, both at the longest idle time swept below the server's
# declared keep-alive, bare (checks.py): a release is judged on its failed reuses; the share
# answered is shown, not judged (a connection closed before the send is retried, not failed).
CHECKS = (
    Check(
        "failed_reuses",
        "failed reuses",
        "idle_pool_checks.csv",
        Layout.ROW,
        verdicts="idle_pool_verdicts.csv",
        change="failed reuses just below the keep-alive",
    ),
    Check("answered_reuses", "answered reuses", "idle_pool_checks.csv", Layout.ROW),
)


def _wanted(config, matrix, cell) -> bool:
    """Each server of a profile with `idle_pool` that is not itself a deployment behind a front."""
    asked = matrix.profiles[cell.profile].settings(PROFILE_KEY)
    return bool(asked) and not is_fronted(config["catalogue"][cell.server])


def _section(tables: dict, inputs: Inputs) -> Section | None:
    answers = tables.get("idle_pool_answers.csv")
    return idle_pool_section(answers, tables.get("idle_pool.csv")) if answers else None


LENS = Lens(
    name="idlepool",
    question="Which balancer idle timeout is safe for this server?",
    folder=Path(__file__).parent,
    profile_key=PROFILE_KEY,
    settings=IdlePoolSettings,
    # Its own jobs alone read its settings: the timed cells' conditions leave them out.
    conditions=False,
    place=Place.LEAD,
    jobs=per_server("idlepool", _wanted),
    tables=(
        "idle_pool.csv",
        "idle_pool_costs.csv",
        "idle_pool_checks.csv",
        "idle_pool_verdicts.csv",
        "idle_pool_answers.csv",
    ),
    section=_section,
    checks=CHECKS,
    words=Words(kinds=IdlePoolKind, metrics=IdlePoolMetric),
    measure_job=MeasureJob(
        entry=f"{__name__}.measure:run_idle_pool",
        record="idlepool/{profile}/{server}.json",
        message="{wildcards.server}'s idle pool swept around its keep-alive (profile {wildcards.profile})",
        database=False,
    ),
    table_job=TableJob(
        entry=f"{__name__}.decide:write_tables",
        outputs={
            "table": "idle_pool.csv",
            "costs": "idle_pool_costs.csv",
            "checks": "idle_pool_checks.csv",
            "verdicts": "idle_pool_verdicts.csv",
            "answers": "idle_pool_answers.csv",
        },
    ),
)
