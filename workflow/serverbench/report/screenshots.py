"""What a person sees: index.html drawn by a real headless Chromium at a
laptop's and a phone's width, kept as PNGs beside the results, with the
page's console errors."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

WIDTHS = {"desktop": (1280, 2400), "phone": (390, 3200)}
CONSOLE_ERROR = re.compile(r'CONSOLE.*"(?:Uncaught|Error)[^"]*"|:ERROR:CONSOLE', re.I)


def browser() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screenshot(url: str, target: Path, size: tuple[int, int]) -> list[str]:
    """Draw ``url`` into ``target`` at ``size``; the console errors the page logged."""
    program = browser()
    if program is None:
        raise FileNotFoundError("chromium not found on PATH (Debian package chromium)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [program, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
             "--enable-logging=stderr", "--v=0", "--hide-scrollbars",
             f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}", "--virtual-time-budget=8000",
             f"--screenshot={target}", url],
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
    if not target.exists():
        raise RuntimeError(f"chromium wrote no screenshot (exit {done.returncode}): {done.stderr[-1000:]}")
    return [line for line in done.stderr.splitlines() if CONSOLE_ERROR.search(line)]


def take_all(index: Path, folder: Path) -> dict[str, list[str]]:
    """index.html at every width of WIDTHS into ``folder``; console errors per width."""
    return {
        name: screenshot(index.resolve().as_uri(), folder / f"index-{name}.png", size) for name, size in WIDTHS.items()
    }
