"""What a person sees: index.html drawn by a real headless Chromium at a
laptop's and a phone's width, kept as PNGs beside the results, with the
page's console errors."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from PIL import Image

from serverbench import files
from serverbench.record.vocabulary import Status

# A laptop, the narrowest window a desktop browser keeps, a phone.
WIDTHS = {"desktop": (1280, 2400), "narrow": (500, 3000), "phone": (390, 3200)}
CONSOLE_ERROR = re.compile(r'CONSOLE.*"(?:Uncaught|Error)[^"]*"|:ERROR:CONSOLE', re.I)


def browser() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(url: str, size: tuple[int, int], action: list[str], extra=()) -> subprocess.CompletedProcess:
    """Headless Chromium at ``size`` on ``url``, doing ``action`` (a screenshot, a DOM dump)
    once the page has had 8 s of virtual time to draw."""
    program = browser()
    if program is None:
        raise FileNotFoundError("chromium not found on PATH (Debian package chromium)")
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [
                program,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-quic",
                "--enable-logging=stderr",
                "--v=0",
                "--hide-scrollbars",
                *extra,
                f"--user-data-dir={profile}",
                f"--window-size={size[0]},{size[1]}",
                "--virtual-time-budget=8000",
                *action,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if CONSOLE_ERROR.search(line)]


def screenshot(url: str, target: Path, size: tuple[int, int]) -> list[str]:
    """Draw ``url`` into ``target`` at ``size``; the console errors the page logged."""
    target.parent.mkdir(parents=True, exist_ok=True)
    done = _chromium(url, size, [f"--screenshot={target}"])
    if not target.exists():
        raise RuntimeError(f"chromium wrote no screenshot (exit {done.returncode}): {done.stderr[-1000:]}")
    return console_errors(done.stderr)


# A page that holds index.html in a frame of the width wanted and, once every chart is
# drawn, writes the framed page's geometry as JSON.
MEASURE = """<!doctype html><html><body style="margin:0">
<iframe id="page" src="@PAGE@" style="border:0;width:@WIDTH@px;height:@HEIGHT@px"></iframe>
<script>
const frame = document.getElementById('page');
frame.addEventListener('load', () => {
  const inner = frame.contentWindow, doc = frame.contentDocument;
  const drawn = inner.serverbenchCharts || Promise.resolve();
  drawn.catch(() => null).then(() => setTimeout(() => {
    const charts = Array.from(doc.querySelectorAll('.chart'), box => {
      const picture = box.querySelector('canvas, svg');
      const rect = (picture || box).getBoundingClientRect();
      return {title: box.dataset.title, drawn: Boolean(picture), left: rect.left, right: rect.right,
              width: rect.width, height: rect.height, box_height: box.getBoundingClientRect().height};
    });
    // How far the page itself scrolls sideways (a box that scrolls inside itself does not count).
    inner.scrollTo(1e6, 0);
    const scrolled = inner.scrollX;
    inner.scrollTo(0, 0);
    // Text straight in the body is what an inline script cut short by the HTML parser leaves
    // (its code shown as one unbreakable line, wider than any window).
    const stray = Array.from(doc.body.childNodes).filter(n => n.nodeType === 3 && n.textContent.trim())
      .map(n => n.textContent.trim().slice(0, 80));
    const layout = {viewport: inner.innerWidth, document: doc.documentElement.scrollWidth, scroll_x: scrolled, charts,
                    stray_text: stray};
    const out = document.createElement('pre');
    out.id = 'serverbench-layout';
    out.textContent = JSON.stringify(layout);
    document.body.appendChild(out);
  }, 300));
});
</script></body></html>"""
LAYOUT = re.compile(r'<pre id="serverbench-layout">(.*?)</pre>', re.S)


def _framed(index: Path, width: int, height: int, action: list[str]) -> subprocess.CompletedProcess:
    """Chromium on a page holding ``index`` in a frame ``width`` px wide: a true phone's
    viewport (headless Chromium will not make its own window narrower than 500 px, and a page
    drawn at 500 px and shown at 390 is not what a phone shows)."""
    probe = index.with_name(f".framed-{width}-{index.name}")  # beside the page: file access is per folder
    filled = {"@PAGE@": html.escape(index.name), "@WIDTH@": str(width), "@HEIGHT@": str(height)}
    probe.write_text(re.sub("@[A-Z]+@", lambda token: filled[token.group(0)], MEASURE))
    try:
        return _chromium(
            probe.resolve().as_uri(), (max(width, 500), height), action, extra=["--allow-file-access-from-files"]
        )
    finally:
        probe.unlink()


def layout(index: Path, width: int, height: int = 3200) -> dict:
    """How ``index`` lays out at ``width`` px in a real browser: the viewport's and the
    document's widths, each chart's box and drawing, and the console errors."""
    done = _framed(Path(index), width, height, ["--dump-dom"])
    found = LAYOUT.search(done.stdout)
    if found is None:
        raise RuntimeError(f"the page reported no layout (exit {done.returncode}): {done.stderr[-1000:]}")
    return json.loads(html.unescape(found.group(1))) | {"console_errors": console_errors(done.stderr)}


def page_screenshot(index: Path, target: Path, size: tuple[int, int]) -> list[str]:
    """``index`` as a reader sees it at ``size`` (drawn in a frame of that width) into ``target``;
    the console errors the page logged."""
    target.parent.mkdir(parents=True, exist_ok=True)
    wide = target.with_name(f".{target.name}")
    done = _framed(Path(index), size[0], size[1], [f"--screenshot={wide}"])
    if not wide.exists():
        raise RuntimeError(f"chromium wrote no screenshot (exit {done.returncode}): {done.stderr[-1000:]}")
    with Image.open(wide) as window:
        window.crop((0, 0, *size)).save(target)
    wide.unlink()
    return console_errors(done.stderr)


def layout_problems(found: dict, lead: str) -> list[str]:
    """What keeps a reader of this width from the page: a document wider than the window, a
    chart not drawn, the chart titled ``lead`` not whole inside the window, a box taller than
    its drawing (a blank band), a console error."""
    width = found["viewport"]
    problems = [f"the document is {found['document']} px wide in a {width} px window"] * (found["document"] > width)
    scrolled = found.get("scroll_x") or 0
    problems += [f"the page scrolls {scrolled} px to the right"] * (scrolled > 0)
    problems += [f"text outside any element of the page: {text!r}" for text in found.get("stray_text") or []]
    problems += [f"console: {line}" for line in found["console_errors"]]
    for chart in found["charts"]:
        if not chart["drawn"]:
            problems.append(f"{chart['title']}: not drawn")
        elif chart["box_height"] - chart["height"] > 30:
            problems.append(f"{chart['title']}: {chart['box_height'] - chart['height']:.0f} px of blank band under it")
        if chart["title"] == lead and not (0 <= chart["left"] and chart["right"] <= width):
            problems.append(
                f"{chart['title']}: drawn from {chart['left']:.0f} to {chart['right']:.0f} px, "
                f"outside the {width} px window"
            )
    return problems


def check_all(index: Path, lead: str) -> dict[str, dict]:
    """index.html's layout at every width of WIDTHS, with what is wrong with it."""
    report = {}
    for name, (width, height) in WIDTHS.items():
        found = layout(index, width, height)
        report[name] = found | {"problems": layout_problems(found, lead)}
    return report


def take_all(index: Path, folder: Path) -> dict[str, list[str]]:
    """index.html at every width of WIDTHS into ``folder``; console errors per width."""
    return {name: page_screenshot(index, folder / f"index-{name}.png", size) for name, size in WIDTHS.items()}


def shoot(index: Path, folder: Path, lead: str) -> dict:
    """The workflow's step: the page at every width of WIDTHS into ``folder`` (index-*.png),
    its console errors (console-errors.json) and its layout (layout.json); always
    ``status.json``: ok, or skipped where no browser is installed, or failed (a browser that
    broke) with the reason. The step's outputs do not depend on the machine, only its status."""
    folder.mkdir(parents=True, exist_ok=True)
    if browser() is None:
        status = {
            "status": Status.SKIPPED,
            "reason": "no browser to draw the page: chromium not on PATH (Debian package)",
        }
    else:
        try:
            errors = take_all(index, folder)
            files.write_json(folder / "console-errors.json", errors)
            files.write_json(folder / "layout.json", check_all(index, lead))
            status = {"status": Status.OK, "reason": None}
        except (OSError, RuntimeError, subprocess.SubprocessError, json.JSONDecodeError) as exc:
            status = {"status": Status.FAILED, "reason": f"{exc.__class__.__name__}: {exc}"}
    files.write_json(folder / "status.json", status)
    return status
