"""A database server beside a cell's server, for apps that declare ``database: true``.

PostgreSQL (a profile's ``database: {engine: postgresql}``): the run's template cluster
(``make_template``, rule ``database_template``: initdb, the app's role and database,
pg_stat_statements) is copied for the cell and started on a Unix socket in the cell's run
directory only (no TCP port, nothing shared between cells), pinned to the CPUs the
profile gives it, and stopped with the cell, so no process outlives the job. The copy
lives in memory (``MEMORY_FS``, tmpfs) where the host has one: on a VM's disk, copying
the cluster's 28 MB took 0.15-1.5 s a cell, varying with the previous cell's writeback,
and a commit's flush measured the disk rather than the servers; in memory it takes
0.05 s, and a flush costs nothing (the copy is thrown away with the cell). The app
finds it through a descriptor the cell writes (``data/database.json`` in the run
directory's copy of the apps). Its own counters (pg_stat_statements, only SELECT,
INSERT, UPDATE and DELETE: utility statements are not tracked) say how many statements
the app's role ran while the load ran: the proof that the app really queried.

SQLite starts nothing: the descriptor names the file the app's setup makes.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from serverbench.cell.errors import CellFailed
from serverbench.host.runenv import SetupFailed, run_setup
from serverbench.plan import apps

SERVER_USER = "postgres"  # the OS user PostgreSQL runs as: it refuses to run as root
ADMIN_ROLE = "postgres"  # the harness's role (initdb's superuser): its statements are not counted
APP_ROLE = "serverbench"  # the role and database the app connects to: its statements are counted
PORT = 5432  # names the socket file only: the server listens on no TCP port
MEMORY_FS = Path("/dev/shm")  # where a cell's cluster lives when the host has it (Linux: tmpfs)
DESCRIPTOR = "data/database.json"  # in the run directory's copy of the apps, where the apps look
DATABASE_VARIABLE = "SERVERBENCH_DATABASE"  # the descriptor's path, in the server's environment
# What the harness needs of the server: a socket in the cell's directory and nothing else,
# statements counted per role (the app's only; no BEGIN or SET).
SETTINGS = {
    "listen_addresses": "",
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track": "top",
    "pg_stat_statements.track_utility": "off",
}
READY_TIMEOUT = 30.0
SETUP_TIMEOUT = 300.0  # the app's rows, once per run
STOP_GRACE = 10.0


class DatabaseError(RuntimeError):
    """The database did not start, answer or stop; the message says why (and its log's end)."""


@dataclass(frozen=True)
class Counters:
    """The app role's statements so far, and the rows they returned or changed."""

    statements: int
    rows: int

    def since(self, before: Counters) -> Counters:
        return Counters(self.statements - before.statements, self.rows - before.rows)


def shortfall(counted: Counters, answers: int, per_request: float, mixed: bool = False) -> str | None:
    """Why the load's answers cannot all have come from the database (None if they can):
    fewer statements than they need. A mix's parts come in turn per connection, so its
    share is met within 5%."""
    needed = answers * per_request * (0.95 if mixed else 1.0)
    if counted.statements >= needed:
        return None
    return (
        f"the app ran {counted.statements} statements for {answers} answers that need"
        f" {per_request:g} each ({answers * per_request:.0f}): answers not from the database"
    )


def _program(spec: dict, name: str) -> str:
    return str(Path(bindir(spec)) / name)


def bindir(spec: dict) -> str:
    """Where the engine's programs are: the spec's ``bindir``, else what ``pg_config --bindir``
    says (Debian's postgresql-common answers with the newest PostgreSQL installed), else a
    path that names the missing program."""
    return spec.get("bindir") or _pg_config_bindir() or "/nonexistent (no bindir, and pg_config found none)"


@functools.cache
def _pg_config_bindir() -> str | None:
    try:
        done = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=False)
    except OSError:
        return None
    found = done.stdout.strip()
    return found if done.returncode == 0 and found.startswith("/") else None


def version(spec: dict) -> str | None:
    try:
        done = subprocess.run([_program(spec, "postgres"), "--version"], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return done.stdout.strip() or None


def _as_server_user(argv: list[str], log, timeout: float = 120) -> None:
    try:
        done = subprocess.run(
            argv, user=SERVER_USER, stdin=subprocess.DEVNULL, stdout=log, stderr=log, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DatabaseError(f"{argv[0]} did not run: {exc}") from None
    if done.returncode != 0:
        raise DatabaseError(f"{' '.join(argv)} exited {done.returncode}")


def make_template(spec: dict, out: Path, log_path: Path, setup: list[str] | None = None, values: dict | None = None):
    """An initialised, stopped cluster at ``out`` (owned by the server's user): the app's
    role and database with pg_stat_statements, the settings in its configuration, and the
    app's rows: its ``setup`` argv run once here against the cluster (``values``: the
    placeholders it may use beside {database} and {rundir}), so that every cell copies them ready."""
    work = Path(tempfile.mkdtemp(prefix="serverbench-pg-"))
    try:
        work.chmod(0o711)
        shutil.chown(work, SERVER_USER)
        data = work / "data"
        with log_path.open("ab") as log:
            initdb = [_program(spec, "initdb"), "-D", str(data), "-U", ADMIN_ROLE, "--auth=trust", "-E", "UTF8"]
            # 1 MB WAL segments: a cell copies the cluster, and 16 MB of empty WAL is most of it.
            _as_server_user([*initdb, "--locale=C.UTF-8", "--wal-segsize=1", "--no-sync"], log)
        settings = {**SETTINGS, **spec.get("settings", {})}
        with (data / "postgresql.conf").open("a") as conf:
            conf.write("\n# serverbench (serverbench.cell.database)\n")
            conf.writelines(f"{key} = '{value}'\n" for key, value in settings.items())
        cluster = Cluster(spec, data, work, cpus=[], log_path=log_path)
        cluster.start(dbname="postgres")
        try:
            cluster.query(f"CREATE ROLE {APP_ROLE} LOGIN", "postgres")
            cluster.query(f"CREATE DATABASE {APP_ROLE} OWNER {APP_ROLE}", "postgres")
            cluster.query("DROP DATABASE postgres", APP_ROLE)
            cluster.query("CREATE EXTENSION pg_stat_statements", APP_ROLE)
            if setup:
                descriptor = _describe(work / "database.json", work)
                named = {**(values or {}), "rundir": str(work), "database": str(descriptor)}
                argv = [str(item).format(**named) for item in setup]
                try:
                    run_setup(argv, log_path, cwd=work, env=None, timeout=SETUP_TIMEOUT)
                except SetupFailed as exc:
                    raise DatabaseError(f"the app's {exc}") from None
                cluster.query("SELECT pg_stat_statements_reset()", APP_ROLE)
            cluster.query("CHECKPOINT", APP_ROLE)
        finally:
            cluster.stop()
        partial = out.with_name(out.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        _copy(data, partial)
        shutil.rmtree(out, ignore_errors=True)
        partial.rename(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _describe(path: Path, sockets: Path) -> Path:
    """The descriptor the app and its setup read: where the server's socket is."""
    where = {"engine": "postgresql", "host": str(sockets), "port": PORT, "dbname": APP_ROLE, "user": APP_ROLE}
    path.write_text(json.dumps(where))
    path.chmod(0o644)
    return path


def _copy(source: Path, target: Path) -> None:
    """A cluster's directory with its owner and modes (PostgreSQL refuses a data
    directory others can read)."""
    try:
        subprocess.run(["cp", "-a", str(source), str(target)], check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as exc:
        raise DatabaseError(f"could not copy the database's template: {exc.stderr.strip()}") from None


class Cluster:
    """One PostgreSQL server on a data directory, listening on a socket in ``sockets``."""

    def __init__(self, spec: dict, data: Path, sockets: Path, cpus: list[int], log_path: Path):
        self.spec, self.data, self.sockets, self.cpus, self.log_path = spec, data, sockets, cpus, log_path
        self.process: subprocess.Popen | None = None

    def start(self, dbname: str = APP_ROLE) -> float:
        """Starts the server; the seconds until it answered (in ``dbname``)."""
        began = time.monotonic()
        if not os.access(_program(self.spec, "postgres"), os.X_OK):
            raise DatabaseError(f"no program {_program(self.spec, 'postgres')} (the database's bindir in `databases`)")
        argv = [_program(self.spec, "postgres"), "-D", str(self.data), "-k", str(self.sockets), "-p", str(PORT)]
        if self.cpus:
            argv = ["taskset", "-c", ",".join(map(str, self.cpus)), *argv]
        with self.log_path.open("ab") as log:
            try:
                self.process = subprocess.Popen(
                    argv, user=SERVER_USER, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
                )
            except OSError as exc:
                raise DatabaseError(f"postgres did not start: {exc}") from None
        while True:
            if self.process.poll() is not None:
                raise DatabaseError(f"postgres exited with code {self.process.returncode}{self._log_end()}")
            try:
                self.query("SELECT 1", dbname, timeout=5)
                return time.monotonic() - began
            except DatabaseError:
                if time.monotonic() - began > READY_TIMEOUT:
                    self.stop()
                    raise DatabaseError(f"postgres did not answer in {READY_TIMEOUT:.0f} s{self._log_end()}") from None
                time.sleep(0.05)

    def query(self, sql: str, dbname: str, timeout: float = 30) -> str:
        """One statement through psql as the harness's role; its output unaligned."""
        argv = [_program(self.spec, "psql"), "-h", str(self.sockets), "-p", str(PORT), "-U", ADMIN_ROLE, "-d", dbname]
        try:
            done = subprocess.run(
                [*argv, "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DatabaseError(f"psql did not run: {exc}") from None
        if done.returncode != 0:
            raise DatabaseError(f"psql: {done.stderr.strip()[:300]}")
        return done.stdout.strip()

    def counters(self) -> Counters:
        totals = self.query(
            "SELECT coalesce(sum(calls), 0), coalesce(sum(rows), 0) FROM pg_stat_statements"
            f" WHERE userid = '{APP_ROLE}'::regrole",
            APP_ROLE,
        )
        statements, rows = totals.split("|")
        return Counters(int(statements), int(rows))

    def stop(self) -> str | None:
        """Fast shutdown (SIGINT), then immediate (SIGQUIT), then SIGKILL to its group; how it ended."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return None
        for sig, grace, how in ((signal.SIGINT, STOP_GRACE, "fast"), (signal.SIGQUIT, 5.0, "immediate")):
            process.send_signal(sig)
            try:
                process.wait(grace)
                return how
            except subprocess.TimeoutExpired:
                continue
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return "killed"

    def _log_end(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return f": {lines[-1]}" if lines else ""


class Database:
    """The database a cell's app uses, from start to stop: a PostgreSQL cluster copied from
    the template, or a SQLite file (nothing to run). ``descriptor`` is what the app reads."""

    def __init__(self, engine: str, spec: dict, template: Path | None, rundir: Path, cpus: list[int]):
        self.engine, self.spec, self.template, self.rundir, self.cpus = engine, spec, template, rundir, cpus
        self.cluster: Cluster | None = None
        self.started_s: float | None = None
        self.data_home: Path | None = None  # the cluster's data directory's parent, removed at stop

    @property
    def descriptor_path(self) -> Path:
        return self.rundir / "apps" / DESCRIPTOR

    @property
    def made_by_template(self) -> bool:
        """The app's rows came with the template (its setup ran there, once per run)."""
        return self.engine != "sqlite"

    def start(self, log_path: Path) -> None:
        """Starts the server (PostgreSQL, a copy of the template) and writes the descriptor
        the app and its setup read."""
        self.descriptor_path.parent.mkdir(parents=True, exist_ok=True)
        if self.engine == "sqlite":
            sqlite = {"engine": "sqlite", "path": str(self.descriptor_path.parent / "world.sqlite")}
            self.descriptor_path.write_text(json.dumps(sqlite))
            self.descriptor_path.chmod(0o644)
            return
        if self.template is None or not (self.template / "PG_VERSION").exists():
            raise DatabaseError(f"no database template at {self.template} (rule database_template makes it)")
        home = self.rundir / "postgresql"
        home.mkdir()
        shutil.chown(home, SERVER_USER)
        home.chmod(0o755)  # the apps' users reach the socket in it
        self.data_home = Path(tempfile.mkdtemp(prefix="serverbench-pg-", dir=memory_fs()))
        self.data_home.chmod(0o711)  # PostgreSQL's user reaches its data directory through it
        _copy(self.template, self.data_home / "data")
        self.cluster = Cluster(self.spec, self.data_home / "data", home, self.cpus, log_path)
        self.started_s = self.cluster.start()
        _describe(self.descriptor_path, home)

    def counters(self) -> Counters | None:
        """The app's statements so far (None where the engine keeps no counters: SQLite)."""
        return self.cluster.counters() if self.cluster is not None else None

    @property
    def storage(self) -> str | None:
        """Where the cluster's data lives: "memory" (tmpfs) or "disk" (None without a cluster)."""
        if self.data_home is None:
            return None
        return "memory" if MEMORY_FS in self.data_home.parents else "disk"

    def stop(self) -> str | None:
        try:
            return self.cluster.stop() if self.cluster is not None else None
        finally:
            if self.data_home is not None:
                shutil.rmtree(self.data_home, ignore_errors=True)


def memory_fs() -> Path | None:
    """``MEMORY_FS`` where the harness can write to it, else None (the default temporary directory)."""
    return MEMORY_FS if MEMORY_FS.is_dir() and os.access(MEMORY_FS, os.W_OK | os.X_OK) else None


class QueryAudit:
    """The proof the app queried: the statements its role ran while the load ran (read
    when made and at ``end``), against what the answers need (the workload's
    ``queries_per_request``); fewer fails the cell. Nothing to do without counters."""

    def __init__(self, database: Database | None, section, config: dict, cell):
        self.database, self.section = database, section
        self.per_request = apps.queries_needed(config, cell.profile, cell.workload)
        self.mixed = "mix" in apps.workloads(config, cell.profile)[cell.workload]
        self.before = self._counters()

    def _counters(self) -> Counters | None:
        if self.database is None:
            return None
        try:
            return self.database.counters()
        except DatabaseError as exc:
            raise CellFailed(f"the app's database did not answer: {exc}") from None

    def end(self, load, raw_text: str = "") -> str:
        """Judges the load's answers; returns the load's output (a failure carries it)."""
        after = self._counters()
        if self.before is None or after is None or load is None:
            return raw_text
        counted, found = after.since(self.before), self.section
        answers = max(0, (load.requests or 0) - (load.errors_total or 0))
        found.statements, found.rows, found.answers = counted.statements, counted.rows, answers
        found.statements_per_request = round(counted.statements / answers, 3) if answers else None
        found.needed_per_request = self.per_request
        if self.per_request:
            found.shortfall = shortfall(counted, answers, self.per_request, self.mixed)
            if found.shortfall:
                raise CellFailed(found.shortfall, raw_text)
        return raw_text
