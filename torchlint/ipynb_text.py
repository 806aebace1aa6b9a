"""A notebook's JSON text, read and edited in place: where each cell's ``source`` value
is, where each character of a cell's code stands in the file, and a new ``source`` value
written in the file's own JSON style."""

from __future__ import annotations

import json
import re
from typing import Any


class NotebookError(Exception):
    """The file is not a notebook this tool can read; the message is one line."""


class SpanParser:
    """A small JSON parser that also records where each cell's ``source`` value is."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, what: str) -> NotebookError:
        line = self.text.count("\n", 0, self.pos) + 1
        return NotebookError(f"invalid JSON at line {line}: {what}")

    def ws(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        self.pos = pos

    def value_span(self) -> tuple[int, int]:
        """Skip one JSON value; return its span."""
        self.ws()
        start = self.pos
        try:
            _, end = json.JSONDecoder().raw_decode(self.text, start)
        except json.JSONDecodeError as exc:
            self.pos = exc.pos
            raise self.error(exc.msg) from None
        self.pos = end
        return start, end

    def source_spans(self, legacy: bool = False) -> list[tuple[int, int] | None]:
        """Span of each cell's ``"source"`` value, in cell order (None: no source key).

        ``legacy``: nbformat 3, whose cells sit in ``worksheets`` with their code in
        ``"input"``."""
        spans: list[tuple[int, int] | None] = []
        self.ws()
        if not self.text.startswith("{", self.pos):
            raise self.error("a notebook is a JSON object")
        for key, _ in self._members():
            if key == "cells" and not legacy:
                spans = self._cells("source")
            elif key == "worksheets" and legacy:
                spans = self._worksheets()
            else:
                self.value_span()
        return spans

    def _worksheets(self) -> list[tuple[int, int] | None]:
        spans: list[tuple[int, int] | None] = []
        for _ in self._objects("worksheets", "worksheet"):
            for key, _ in self._members():
                if key == "cells":
                    spans.extend(self._cells("input"))
                else:
                    self.value_span()
        return spans

    def _objects(self, name: str, item: str) -> Any:
        """Step into each object of the JSON list ``name`` in turn (for :meth:`_members`)."""
        self.ws()
        if not self.text.startswith("[", self.pos):
            raise self.error(f"'{name}' must be a list")
        self.pos += 1
        self.ws()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            return
        while True:
            self.ws()
            if not self.text.startswith("{", self.pos):
                raise self.error(f"each {item} must be an object")
            yield
            self.ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return
            raise self.error("expected ',' or ']'")

    def _members(self) -> Any:
        self.pos += 1  # '{'
        self.ws()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            return
        while True:
            self.ws()
            key_start, key_end = self.value_span()
            key = json.loads(self.text[key_start:key_end])
            self.ws()
            if not self.text.startswith(":", self.pos):
                raise self.error("expected ':'")
            self.pos += 1
            self.ws()
            yield key, self.pos
            self.ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("}", self.pos):
                self.pos += 1
                return
            raise self.error("expected ',' or '}'")

    def _cells(self, source_key: str) -> list[tuple[int, int] | None]:
        spans: list[tuple[int, int] | None] = []
        for _ in self._objects("cells", "cell"):
            span: tuple[int, int] | None = None
            for key, _ in self._members():
                found = self.value_span()
                if key == source_key:
                    span = found
            spans.append(span)
        return spans



def string_literals(raw: str, span: tuple[int, int]) -> list[int]:
    """Where each JSON string literal of a ``source`` value starts (a string, or a list of
    strings, one per line as nbformat writes them)."""
    start, end = span
    if raw.startswith('"', start):
        return [start]
    found: list[int] = []
    decoder = json.JSONDecoder()
    position = start + 1
    while position < end:
        while position < end and raw[position] in " \t\r\n,":
            position += 1
        if position >= end or raw[position] != '"':
            break
        found.append(position)
        _, position = decoder.raw_decode(raw, position)
    return found


def decoded_offsets(raw: str, start: int) -> list[int]:
    """For the JSON string literal at ``raw[start]``, the raw offset of each character it
    decodes to, then the offset of its closing quote (escapes take 2, 6 or 12 characters
    of the file for one character of text)."""
    offsets: list[int] = []
    position = start + 1
    while raw[position] != '"':
        offsets.append(position)
        if raw[position] != "\\":
            position += 1
        elif raw[position + 1] != "u":
            position += 2
        elif 0xD800 <= int(raw[position + 2:position + 6], 16) < 0xDC00 and \
                raw.startswith("\\u", position + 6) and \
                0xDC00 <= int(raw[position + 8:position + 12], 16) < 0xE000:
            position += 12  # a surrogate pair decodes to one character
        else:
            position += 6
    offsets.append(position)
    return offsets


def indent_before(raw: str, offset: int) -> str:
    line_start = raw.rfind("\n", 0, offset) + 1
    prefix = raw[line_start:offset]
    return prefix[: len(prefix) - len(prefix.lstrip())]


def format_source(text: str, as_list: bool, old: str, key_indent: str,
                   ensure_ascii: bool) -> str:
    """A JSON value for ``text`` in the style of ``old`` (the value it replaces)."""
    if not as_list:
        return json.dumps(text, ensure_ascii=ensure_ascii)
    lines = text.splitlines(keepends=True)
    if not lines:
        return "[]"
    items = [json.dumps(line, ensure_ascii=ensure_ascii) for line in lines]
    match = re.match(r"\[(\s*)", old)
    gap = match.group(1) if match else ""
    if "\n" not in gap:  # a one-line list
        return "[" + gap + ", ".join(items) + ("]" if not gap else gap + "]")
    item_indent = gap.split("\n")[-1]
    closing = re.search(r"(\r?\n[ \t]*)\]$", old)
    close = closing.group(1) if closing else "\n" + key_indent
    newline = "\r\n" if "\r\n" in gap else "\n"
    separator = "," + newline + item_indent
    return "[" + newline + item_indent + separator.join(items) + close + "]"
