"""A lens's section written out: answers.md's part and the console's lines, one writer each for
every lens (the page's part is ``templates/section.html.j2``), and the one markdown table
writer the docs' tables use too."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from serverbench.lens import Block, Group, Medium, Paragraph, Section, Sentences, Table

INDENT = "  "  # the console's: a section's lines under its heading, a group's under its own


def markdown_table(
    columns: Sequence[str], rows: Iterable[Sequence[str]], align: Mapping[str, str] | None = None
) -> str:
    """A markdown table: a line per row, each cell as written; ``align`` a column's separator
    (``---:``) where not ``---``."""
    lines = [
        "| " + " | ".join(columns) + " |",
        "| " + " | ".join((align or {}).get(column, "---") for column in columns) + " |",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
    return "\n".join(lines)


def _block_markdown(block: Block) -> str:
    if isinstance(block, Paragraph):
        return block.text
    if isinstance(block, Sentences):
        return "\n".join(block.marker + item for item in block.items)
    if isinstance(block, Table):
        return markdown_table(block.columns, ([cell.text for cell in row] for row in block.rows))
    if isinstance(block, Group):
        return _joined([f"### {block.heading}", *map(_block_markdown, block.on(Medium.MARKDOWN))])
    return ""


def _joined(parts: Iterable[str]) -> str:
    """Blocks apart by a blank line; a block with nothing to say leaves none."""
    return "\n\n".join(part for part in parts if part)


def section_markdown(section: Section) -> str:
    """The section's part of answers.md: its title, then its blocks."""
    return _joined([f"## {section.title}", *map(_block_markdown, section.on(Medium.MARKDOWN))]) + "\n"


def _answers_of(section: Section, medium: Medium) -> list[tuple[str, str, tuple[str, ...]]]:
    """The sentences a section adds to the Answers shown on ``medium``: (title, marker, sentences)
    of each of its answers' groups with any."""
    found = []
    for group in section.answers:
        if medium not in group.media:
            continue
        for block in group.on(medium):
            if isinstance(block, Sentences) and block.items:
                found.append((group.heading, block.marker, block.items))
    return found


def answers_markdown_of(section: Section) -> str:
    """The sentences a section adds to answers.md's Answers, each group as the timed answers'
    sections read (a blank line, its ``##`` title, its list)."""
    return "".join(
        "\n".join(["", f"## {title}", "", *(marker + text for text in items), ""])
        for title, marker, items in _answers_of(section, Medium.MARKDOWN)
    )


def _answers_console(section: Section) -> str:
    """The sentences a section adds to the Answers on the console, each group as the timed
    answers' read (a blank line, "title (n):", its list two spaces in)."""
    return "".join(
        f"\n{title[0].lower()}{title[1:]} ({len(items)}):\n" + "".join(f"{INDENT}{marker}{text}\n" for text in items)
        for title, marker, items in _answers_of(section, Medium.CONSOLE)
    )


def _console_lines(blocks: Iterable[Block], depth: int) -> list[str]:
    lines = []
    for block in blocks:
        if isinstance(block, Paragraph):
            lines.append(INDENT * depth + block.text)
        elif isinstance(block, Sentences):
            lines += [INDENT * (depth + 1) + block.marker + item for item in block.items]
        elif isinstance(block, Group):
            lines.append(INDENT * (depth + 1) + block.heading)
            lines += _console_lines(block.on(Medium.CONSOLE), depth + 1)
    return lines


def section_console(section: Section) -> str:
    """The section's lines on the console: the sentences it adds to the Answers, then its
    blocks' lines after a blank line ("" where it prints none)."""
    lines = _console_lines(section.on(Medium.CONSOLE), 0)
    return _answers_console(section) + ("\n" + "\n".join(lines) + "\n" if lines else "")
