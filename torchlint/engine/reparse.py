"""Parse a new version of a text by parsing again only the top-level statement it changed.

An editor sends a new version of a file on every keystroke, and libcst's parse of a long
file is the costliest part of its lint. When the change between a text parsed before and
the new one lies inside one top-level statement (not the first or the last), that
statement's new code is parsed alone and put in place of the old one in the earlier tree.

The new tree is the one a whole parse would build: the statement's code parses alone as
exactly one statement that ends at the end of a line, outside any bracket, string or line
continuation, so the tokens of the statements around it are those they had (each still
starts a fresh line at column 0); and the lone parse must agree with the earlier tree on
the module's indentation and newline. Anything else (a change across statements, at the
edges of the file, a statement that does not parse alone) is parsed whole. The blank and
comment lines in front of the statement belong to it in a whole parse, and to the lone
module's header in a lone parse: they are moved back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import libcst as cst


@dataclass
class _Parsed:
    text: str
    module: cst.Module
    # the length of each top-level statement's code, in order, and of the module's header
    # (None until an edit asks for them: computing them is a code generation)
    lengths: list[int] | None = None
    header: int = 0


class Reparser:
    """Remembers the last ``size`` texts parsed and their trees."""

    def __init__(self, size: int, parse_whole: Callable[[str], cst.Module]) -> None:
        self.size = size
        self.parse_whole = parse_whole
        self.parsed: list[_Parsed] = []  # the newest last
        self.lock = threading.Lock()
        self.spliced = 0  # how many parses were answered by a statement's parse alone

    def parse(self, text: str) -> cst.Module:
        with self.lock:
            candidates = list(self.parsed)
        for earlier in reversed(candidates):
            if earlier.text == text:
                return earlier.module
        module = None
        entry = None
        for earlier in reversed(candidates):
            entry = _spliced(earlier, text, self.parse_whole)
            if entry is not None:
                module = entry.module
                self.spliced += 1
                break
        if module is None:
            module = self.parse_whole(text)
            entry = _Parsed(text, module)
        with self.lock:
            self.parsed = [p for p in self.parsed if p is not entry][-(self.size - 1):] + [
                entry]  # type: ignore[list-item]
        return module


def _new_footer(earlier: _Parsed, text: str, body_end: int,
                parse_alone: Callable[[str], cst.Module]) -> _Parsed | None:
    """A change after the last statement that leaves only blank lines and comments at
    column 0 there (typing a comment at the end of the file): they are the module's
    footer. An indented line may belong to the last block: parse whole."""
    tail = text[body_end:]
    if not text[:body_end].endswith(("\n", "\r")) or any(
            line and not line.startswith("#") for line in tail.splitlines()):
        return None
    try:
        alone = parse_alone(tail)
    except Exception:  # noqa: BLE001 - libcst's parser raises more than ParserSyntaxError
        return None
    if alone.body or alone.code != tail:
        return None
    module = earlier.module.with_changes(footer=(*alone.header, *alone.footer),
                                         has_trailing_newline=alone.has_trailing_newline)
    return _Parsed(text, module, earlier.lengths, earlier.header)


def _continued(code: str) -> bool:
    """Does the last line of ``code`` end with a backslash (joining the next line)?"""
    return code.rstrip("\r\n").endswith("\\")


def _indented(lines: Sequence[cst.EmptyLine]) -> bool:
    return any(line.whitespace.value for line in lines)


def _changed_span(old: str, new: str) -> tuple[int, int, int]:
    """``(start, old_end, new_end)``: ``old[start:old_end]`` became ``new[start:new_end]``,
    the rest is equal."""
    limit = min(len(old), len(new))
    low, high = 0, limit  # the common prefix's length, by halving (memcmp does the work)
    while low < high:
        middle = (low + high + 1) // 2
        if old[:middle] == new[:middle]:
            low = middle
        else:
            high = middle - 1
    start = low
    low, high = 0, limit - start
    while low < high:
        middle = (low + high + 1) // 2
        if old[len(old) - middle:] == new[len(new) - middle:]:
            low = middle
        else:
            high = middle - 1
    return start, len(old) - low, len(new) - low


def _spliced(earlier: _Parsed, text: str, parse_alone: Callable[[str], cst.Module]
             ) -> _Parsed | None:
    module = earlier.module
    if len(module.body) < 3:
        return None
    start, old_end, new_end = _changed_span(earlier.text, text)
    if earlier.lengths is None:
        # libcst does not give back every text it parses (a line holding only a
        # backslash is lost): splice only into a tree whose code is the text
        codes = [module.code_for_node(statement) for statement in module.body]
        header = "".join(module.code_for_node(line) for line in module.header)
        footer = "".join(module.code_for_node(line) for line in module.footer)
        same = earlier.text == header + "".join(codes) + footer
        earlier.lengths = [len(code) for code in codes] if same else []
        earlier.header = len(header)
    lengths = earlier.lengths
    if not lengths:
        return None
    body_end = earlier.header + sum(lengths)
    if start >= body_end:
        return _new_footer(earlier, text, body_end, parse_alone)
    offset = earlier.header
    for index, length in enumerate(lengths):
        if offset + length >= old_end:
            break
        offset += length
    else:
        return None
    if index in (0, len(lengths) - 1) or start < offset:
        return None
    new_length = length + (new_end - start) - (old_end - start)
    code = text[offset:offset + new_length]
    if not code.endswith(("\n", "\r")) or _continued(code) or _continued(text[:offset]):
        return None
    try:
        alone = parse_alone(code)
    except Exception:  # noqa: BLE001 - libcst's parser raises more than ParserSyntaxError
        return None
    if len(alone.body) != 1 or alone.footer or alone.code != code or not alone.has_trailing_newline or (
            alone.default_indent != module.default_indent) or (
            alone.default_newline != module.default_newline) or (
            alone.encoding != module.encoding):
        return None
    statement = alone.body[0]
    # an indented blank or comment line after a block belongs to the block in a whole
    # parse: where one sits between this statement and a neighbour, parse whole
    if _indented(alone.header) or _indented(module.body[index + 1].leading_lines):
        return None
    if alone.header:
        statement = statement.with_changes(
            leading_lines=(*alone.header, *statement.leading_lines))
    body = list(module.body)
    body[index] = statement
    new_lengths = list(lengths)
    new_lengths[index] = new_length
    return _Parsed(text, module.with_changes(body=tuple(body)), new_lengths, earlier.header)
