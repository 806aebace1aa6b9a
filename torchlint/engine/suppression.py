"""``# noqa`` comments: per line (bare or with codes) and ``# torchlint: noqa`` per file."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

_NOQA = re.compile(r"#\s*noqa(?P<sep>\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?",
                   re.I)
_FILE_NOQA = re.compile(r"#\s*torchlint\s*:\s*noqa(?P<sep>\s*:\s*(?P<codes>[A-Z]+[0-9]+"
                        r"(?:[\s,]+[A-Z]+[0-9]+)*))?\s*$", re.I)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.I)


@dataclass
class Directive:
    line: int
    column: int  # 1-based column of the '#'
    codes: frozenset[str] | None  # None: bare noqa, suppresses everything on the line
    used: set[str] = field(default_factory=set)

    def suppresses(self, code: str) -> bool:
        return self.codes is None or code in self.codes


@dataclass
class Suppressions:
    lines: dict[int, Directive] = field(default_factory=dict)
    file_codes: frozenset[str] | None = frozenset()  # None: whole file suppressed

    def is_suppressed(self, code: str, line: int) -> bool:
        if self.file_codes is None or code in self.file_codes:
            return True
        directive = self.lines.get(line)
        if directive is not None and directive.suppresses(code):
            directive.used.add(code)
            return True
        return False


def _comments(text: str) -> list[tuple[int, int, str]]:
    """(line, 1-based column, comment text) of each comment; regex fallback if untokenizable."""
    try:
        return [
            (tok.start[0], tok.start[1] + 1, tok.string)
            for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        found = []
        for number, line in enumerate(text.splitlines(), start=1):
            hash_at = line.find("#")
            if hash_at >= 0:
                found.append((number, hash_at + 1, line[hash_at:]))
        return found


def parse_suppressions(text: str) -> Suppressions:
    result = Suppressions()
    if "noqa" not in text and "NOQA" not in text.upper():
        return result
    file_codes: set[str] = set()
    for line, column, comment in _comments(text):
        file_match = _FILE_NOQA.search(comment)
        if file_match:
            if file_match.group("codes") is None:
                result.file_codes = None
                return result
            file_codes.update(c.upper() for c in _CODE.findall(file_match.group("codes")))
            continue
        match = _NOQA.search(comment)
        if match:
            codes = match.group("codes")
            parsed = frozenset(c.upper() for c in _CODE.findall(codes)) if codes else None
            result.lines[line] = Directive(line, column + match.start(), parsed)
    result.file_codes = frozenset(file_codes)
    return result
