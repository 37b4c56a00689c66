"""A lens's section, typed: what it shows, block by block, and where each block shows (the page,
answers.md, the console). A lens returns a :class:`Section` (``Lens.section``); the core writes
each medium from it (``report.section``, the page's ``section.html.j2``). Part of the lens
interface (``serverbench.lens`` names every piece), kept apart from the declarations a lens
makes to be wired.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Flag, StrEnum, auto
from pathlib import Path
from typing import ClassVar


class Place(StrEnum):
    """Where a lens's section stands on the page and in answers.md."""

    LEAD = "lead"  # before the timed answers: what a deployer acts on first
    AFTER = "after"  # after the timed answers and their spread
    # Its blocks close the page, after the seed studies (the HTTP checks' tables): they read the
    # run's verdicts, so no rule `answered` prints them before the run's end.
    CLOSING = "closing"


class Medium(Flag):
    """Where a block of a section is shown: a lens's three renderings read differently (the page
    explains with links, answers.md says it shorter, the console prints its answer alone)."""

    PAGE = auto()
    MARKDOWN = auto()
    CONSOLE = auto()


WRITTEN = Medium.PAGE | Medium.MARKDOWN  # the page and answers.md
EVERYWHERE = WRITTEN | Medium.CONSOLE


@dataclass(frozen=True)
class Link:
    """A file of the results named in a paragraph: a link on the page, its name elsewhere."""

    text: str
    href: str = ""  # the text where empty (a table's file name)
    kind: ClassVar[str] = "link"

    @property
    def target(self) -> str:
        return self.href or self.text


@dataclass(frozen=True)
class Emphasis:
    """A word the page sets apart (a column's name read in a paragraph)."""

    text: str
    kind: ClassVar[str] = "emphasis"


@dataclass(frozen=True)
class Paragraph:
    """A paragraph: its text, in parts where a part is a link or an emphasis (a str: one part)."""

    parts: tuple[str | Link | Emphasis, ...] | str
    media: Medium = WRITTEN
    kind: ClassVar[str] = "paragraph"

    def __post_init__(self):
        if isinstance(self.parts, str):
            object.__setattr__(self, "parts", (self.parts,))

    @property
    def text(self) -> str:
        return "".join(part if isinstance(part, str) else part.text for part in self.parts)


@dataclass(frozen=True)
class Sentences:
    """A list of sentences; ``marker`` starts each in answers.md and on the console."""

    items: tuple[str, ...]
    media: Medium = EVERYWHERE
    marker: str = "- "
    kind: ClassVar[str] = "sentences"

    def __post_init__(self):
        object.__setattr__(self, "items", tuple(self.items))


@dataclass(frozen=True)
class Cell:
    """A table's cell, written; ``mark`` a class the page gives it (releases: ``changed``),
    ``note`` what the page shows on hover (a check's evidence)."""

    text: str
    mark: str = ""
    note: str = ""


@dataclass(frozen=True)
class Table:
    """A table of written figures (a row's str is a cell); on the page ``classes`` style it and
    ``labelled`` names each cell by its column (read on a narrow screen), ``caption`` names it,
    ``headed``: each row's first cell names the row (a server)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    media: Medium = WRITTEN
    classes: str = ""
    labelled: bool = False
    caption: str = ""
    headed: bool = False
    kind: ClassVar[str] = "table"

    def __post_init__(self):
        object.__setattr__(self, "columns", tuple(self.columns))
        cells = tuple(tuple(c if isinstance(c, Cell) else Cell(str(c)) for c in row) for row in self.rows)
        object.__setattr__(self, "rows", cells)


@dataclass(frozen=True)
class Figure:
    """A chart drawn in place on the page (id, title, its Vega-Lite spec, links)."""

    chart: Mapping
    media: Medium = Medium.PAGE
    kind: ClassVar[str] = "figure"


@dataclass(frozen=True)
class Template:
    """A lens's own markup for what no other block shows (the work lens's stacked bars), rendered
    from its Jinja template with ``context``: the page only."""

    template: Path
    context: Mapping
    media: Medium = Medium.PAGE
    kind: ClassVar[str] = "template"


@dataclass(frozen=True)
class Group:
    """Blocks under a heading of their own (a server's table; a condition's console lines);
    ``anchor`` the page's id for its heading, where others link to it."""

    heading: str
    blocks: tuple[Block, ...]
    media: Medium = EVERYWHERE
    anchor: str = ""
    kind: ClassVar[str] = "group"

    def on(self, medium: Medium) -> list[Block]:
        return [block for block in self.blocks if medium in block.media]


Block = Paragraph | Sentences | Table | Figure | Template | Group


@dataclass(frozen=True)
class Lead:
    """What a lens decided for the run's first paragraph: its sentences before what time could
    tell, and those it could not decide, after it (the work lens)."""

    decided: tuple[str, ...] = ()
    undecided: tuple[str, ...] = ()


@dataclass(frozen=True)
class Section:
    """What a lens shows, made from its tables: the core writes the page, answers.md and the
    console from it (``report.section``). ``lens`` and ``place`` are its lens's (``section_of``)."""

    title: str
    blocks: tuple[Block, ...]
    lead: Lead | None = None
    # The page's anchor (``#front``), the lens's name where not given.
    anchor: str = ""
    lens: str = ""
    place: Place = Place.AFTER
    # Its sentences the run's Answers list after the timed ones, wherever its place: each a
    # Group of Sentences under its title (the page's h3 in the Answers, answers.md's ## right
    # after the timed answers, the console's "title (n):" after theirs; the HTTP checks').
    answers: tuple[Group, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "blocks", tuple(self.blocks))
        object.__setattr__(self, "answers", tuple(self.answers))

    @property
    def id(self) -> str:
        return self.anchor or self.lens.replace("_", "-")

    def on(self, medium: Medium) -> list[Block]:
        return [block for block in self.blocks if medium in block.media]
