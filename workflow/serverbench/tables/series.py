"""The time series of the measured runs: workers.csv (processes over time, for
autoscaling) and steady.csv (req/s in each second of a run)."""

from __future__ import annotations

import pandas as pd

from serverbench.record.model import load_record
from serverbench.record.vocabulary import Status
from serverbench.tables.columns import CELL_KEYS, STEADY_COLUMNS, WINDOW_COLUMNS, WORKER_COLUMNS
from serverbench.tables.runs import MB

SAMPLE_BIN_S = 0.5


def worker_samples(paths) -> pd.DataFrame:
    """Worker processes and threads over time in every measured cell (the
    autoscaling chart's data), in bins of SAMPLE_BIN_S so a long sweep stays small.
    """
    frames = []
    for path in sorted(map(str, paths)):
        record = load_record(path)
        samples = record.server.samples
        if record.status != Status.OK or not samples:
            continue
        frame = pd.DataFrame(samples)
        if "phase" not in frame:
            frame["phase"] = "load"
        frame["t"] = (frame["t"] // SAMPLE_BIN_S) * SAMPLE_BIN_S
        frame["rss_mb"] = frame["rss"] / MB
        binned = (
            frame.groupby(["t", "phase"], sort=True)
            .agg(processes=("processes", "max"), threads=("threads", "max"), rss_mb=("rss_mb", "max"))
            .reset_index()
        )
        cell = record.cell.to_dict()
        for key in [*CELL_KEYS, "family", "repeat"]:
            binned[key] = cell[key]
        frames.append(binned)
    if not frames:
        return pd.DataFrame(columns=WORKER_COLUMNS)
    out = pd.concat(frames, ignore_index=True)[WORKER_COLUMNS]
    out["rss_mb"] = out["rss_mb"].round(3)
    return out


def steady_series(paths) -> pd.DataFrame:
    """Requests/s in each second of every measured run, where the client sockets were read."""
    rows = []
    for path in sorted(map(str, paths)):
        record = load_record(path)
        steady = record.steady
        if record.status != Status.OK or steady is None or steady.status != Status.OK:
            continue
        cell = record.cell.to_dict()
        for second, rps in enumerate(steady.series_rps, start=1):
            rows.append({**{key: cell[key] for key in [*CELL_KEYS, "family", "repeat"]}, "second": second, "rps": rps})
    return pd.DataFrame(rows, columns=STEADY_COLUMNS)


def window_series(paths) -> pd.DataFrame:
    """Every window of every measured run: its measured duration, the answers it saw, its req/s."""
    frames = []
    for path in sorted(map(str, paths)):
        record = load_record(path)
        windows = record.windows
        if record.status != Status.OK or windows is None or windows.status != Status.OK:
            continue
        cell = record.cell.to_dict()
        frame = pd.DataFrame({"duration_s": windows.durations_s, "answers": windows.answers})
        frame.insert(0, "window", range(1, len(frame) + 1))
        for key in reversed([*CELL_KEYS, "family", "repeat"]):
            frame.insert(0, key, cell[key])
        frame["rps"] = (frame["answers"] / frame["duration_s"]).round(2)
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=WINDOW_COLUMNS)
    return pd.concat(frames, ignore_index=True)[WINDOW_COLUMNS]
