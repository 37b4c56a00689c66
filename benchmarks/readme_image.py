"""The README's picture of the Answers, from a run's own desktop screenshot.

    .venv/bin/python benchmarks/readme_image.py results    # writes docs/images/answers.png

The top of results/screenshots/index-desktop.png (the paragraph, the forest plot and the
start of the table of every comparison), scaled to 900 px wide.
"""

import argparse
from pathlib import Path

from PIL import Image

REPO = Path(__file__).resolve().parents[1]
TARGET = REPO / "docs" / "images" / "answers.png"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--height", type=int, default=1750, help="px of the page kept, from its top")
    args = parser.parse_args()
    with Image.open(args.results / "screenshots" / "index-desktop.png") as page:
        top = page.crop((0, 0, page.width, min(args.height, page.height)))
    scaled = top.resize((900, round(top.height * 900 / top.width)), Image.Resampling.LANCZOS)
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    # Full colour: a palette merges the outcomes' colours, which are few pixels of the page.
    scaled.convert("RGB").save(TARGET, optimize=True)
    print(f"{TARGET.relative_to(REPO)}: {TARGET.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
