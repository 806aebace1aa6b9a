"""Positions between torchlint (1-based lines, 1-based character columns, character
offsets) and the client (0-based lines, columns in the client's units), and the smallest
text edits that turn one text into another."""

from __future__ import annotations

import bisect
import difflib
import re
from dataclasses import dataclass

from lsprotocol import types
from pygls.workspace import PositionCodec

_NEWLINE = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class TextChange:
    """Replace ``text[start:end]`` (character offsets) by ``new``."""

    start: int
    end: int
    new: str


class Offsets:
    """One text's character offsets and positions, in the client's position units."""

    def __init__(self, codec: PositionCodec, text: str) -> None:
        self.text = text
        self.codec = codec
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        self.lines = text.splitlines(keepends=True) or [""]

    def position(self, line: int, column: int) -> types.Position:
        """From a 1-based line and 1-based character column."""
        return self.codec.position_to_client_units(
            self.lines, types.Position(line=max(0, line - 1), character=max(0, column - 1)))

    def range(self, line: int, column: int, end_line: int, end_column: int) -> types.Range:
        start = self.position(line, column)
        end = self.position(end_line, end_column)
        if (end.line, end.character) < (start.line, start.character):
            end = start
        return types.Range(start=start, end=end)

    def at(self, offset: int) -> types.Position:
        index = bisect.bisect_right(self.starts, offset) - 1
        return self.position(index + 1, offset - self.starts[index] + 1)

    def line_column(self, position: types.Position) -> tuple[int, int]:
        """A client position as a 1-based line and character column."""
        server = self.codec.position_from_client_units(self.lines, position)
        return server.line + 1, server.character + 1

    def edit(self, change: TextChange) -> types.TextEdit:
        return types.TextEdit(range=types.Range(start=self.at(change.start),
                                                end=self.at(change.end)),
                              new_text=change.new)


def minimal_changes(old: str, new: str) -> list[TextChange]:
    """Non-overlapping changes turning ``old`` into ``new``: the changed runs of lines
    (difflib's matching), each trimmed to the characters that differ."""
    if old == new:
        return []
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    starts = [0]
    for line in old_lines:
        starts.append(starts[-1] + len(line))
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    changes: list[TextChange] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start, end = starts[i1], starts[i2]
        before, after = old[start:end], "".join(new_lines[j1:j2])
        prefix = 0
        while prefix < min(len(before), len(after)) and before[prefix] == after[prefix]:
            prefix += 1
        suffix = 0
        while suffix < min(len(before), len(after)) - prefix and \
                before[-1 - suffix] == after[-1 - suffix]:
            suffix += 1
        changes.append(TextChange(start + prefix, end - suffix,
                                  after[prefix:len(after) - suffix]))
    return changes


def apply_changes(text: str, changes: list[TextChange]) -> str:
    for change in sorted(changes, key=lambda c: c.start, reverse=True):
        text = text[:change.start] + change.new + text[change.end:]
    return text
