"""Source offsets of a few nodes, computed only when a file has something to report.

libcst's PositionProvider records a range for every node of the file (about
1.7x the parse time). A file with no findings needs no positions at all, and
one with findings needs them for a handful of nodes, so this runs libcst's
own code generator once with a state that counts characters and remembers
the offsets of just the requested nodes, stopping as soon as it has them.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable

import libcst as cst
from libcst._nodes.internal import CodegenState

_NEWLINE = re.compile(r"\r\n|\r|\n")


class _Done(Exception):
    pass


class _OffsetState(CodegenState):
    def __init__(self, module: cst.Module, targets: set[int], *, stop_early: bool = True
                 ) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.targets = targets
        # stop_early: raise _Done once every target is located (the rest of the code is
        # not needed); otherwise generate it all
        self.remaining = len(targets) if stop_early else -1
        self.starts: dict[int, int] = {}
        self.ends: dict[int, int] = {}
        self._counted_tokens = 0
        self._offset = 0

    def _current(self) -> int:
        tokens = self.tokens
        if self._counted_tokens > len(tokens):  # pop_trailing_newline removed a token
            self._counted_tokens = 0
            self._offset = 0
        for token in tokens[self._counted_tokens:]:
            self._offset += len(token)
        self._counted_tokens = len(tokens)
        return self._offset

    def before_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self.targets and key not in self.starts:
            self.starts[key] = self._current()

    def after_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self.targets and key not in self.ends:
            self.ends[key] = self._current()
            self.remaining -= 1
            if self.remaining == 0:
                raise _Done


class Locator:
    """Offsets, and line/column pairs, of nodes in one module's source text.

    With ``hints`` (node id -> the top-level statement thought to hold it), only those
    statements are generated: each one's code is found in the text, where it must occur
    exactly once after the previous one. Whenever a hint is missing or wrong, or a
    statement's code is not unique, the whole module is generated instead.
    """

    def __init__(self, module: cst.Module, text: str, nodes: Iterable[cst.CSTNode],
                 hints: dict[int, cst.CSTNode] | None = None) -> None:
        self.text = text
        self._line_starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        nodes = list(nodes)
        targets = {id(n) for n in nodes}
        located = _by_statement(module, text, nodes, hints) if hints and targets else None
        if located is not None:
            self._starts, self._ends = located
            return
        state = _OffsetState(module, targets)
        if targets:
            try:
                module._codegen(state)
            except _Done:
                pass
        self._starts = state.starts
        self._ends = state.ends

    def raw_range(self, node: cst.CSTNode) -> tuple[int, int]:
        """Offsets of all the node's code, leading comment lines of a statement included.
        A file without a final newline ends inside the last statement's generated code
        (which has one): offsets stop at the end of the text."""
        size = len(self.text)
        return min(self._starts[id(node)], size), min(self._ends[id(node)], size)

    def range(self, node: cst.CSTNode) -> tuple[int, int]:
        """Offsets from the node's first token to its last (no leading lines, no newline)."""
        start, end = self.raw_range(node)
        if hasattr(node, "leading_lines") or isinstance(node, cst.BaseCompoundStatement):
            start = self._skip_blank_and_comments(start, end)
        text = self.text
        while end > start and text[end - 1] in " \t\f\r\n\\":
            end -= 1
        return start, end

    def _skip_blank_and_comments(self, start: int, end: int) -> int:
        text = self.text
        i = start
        while i < end:
            ch = text[i]
            if ch in " \t\f\r\n":
                i += 1
            elif ch == "#":
                while i < end and text[i] not in "\r\n":
                    i += 1
            else:
                break
        return i

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and 1-based column (characters) of an offset."""
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return line + 1, offset - self._line_starts[line] + 1

    def line_start(self, offset: int) -> int:
        return self._line_starts[bisect.bisect_right(self._line_starts, offset) - 1]

    def line_end(self, offset: int) -> int:
        """Offset just past the newline of the line holding ``offset``."""
        index = bisect.bisect_right(self._line_starts, offset)
        return self._line_starts[index] if index < len(self._line_starts) else len(self.text)


def _by_statement(module: cst.Module, text: str, nodes: list[cst.CSTNode],
                  hints: dict[int, cst.CSTNode]) -> tuple[dict[int, int], dict[int, int]] | None:
    """Offsets from generating only the hinted top-level statements; None when unsure."""
    wanted: dict[int, set[int]] = {}
    for node in nodes:
        statement = hints.get(id(node))
        if statement is None:
            return None
        wanted.setdefault(id(statement), set()).add(id(node))
    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    search_from = 0
    for statement in module.body:
        ids = wanted.pop(id(statement), None)
        if ids is None:
            continue
        state = _OffsetState(module, ids, stop_early=False)  # its whole code is needed
        statement._codegen(state)
        if not ids <= state.starts.keys() or not ids <= state.ends.keys():
            return None  # a node is not in this statement after all
        code = "".join(state.tokens)
        at = text.find(code, search_from)
        if at < 0 or text.find(code, at + 1) >= 0:
            return None
        for key in ids:
            starts[key] = at + state.starts[key]
            ends[key] = at + state.ends[key]
        search_from = at + len(code)
    if wanted:
        return None  # a hint named a statement that is not at the top level
    return starts, ends
