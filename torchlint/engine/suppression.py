"""``# noqa`` comments: per line (bare, with codes or with prefixes such as ``TL6``) and
``# torchlint: noqa`` per file; which of them are stale (TL002) and the edits that remove
a stale code or add a directive (``--add-noqa``).

A finding on a line that cannot hold a comment of its own (inside a multi-line string, or
continued with a backslash) is suppressed by a directive at the end of that string or
continuation, as in Ruff.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from torchlint.codes import UNUSED_NOQA, UNUSED_NOQA_NAME
from torchlint.diagnostic import Diagnostic, Edit, Fix

_CODES = r"[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*"
_NOQA = re.compile(r"#\s*noqa(?P<sep>\s*:\s*(?P<codes>" + _CODES + "))?", re.I)
_FILE_NOQA = re.compile(r"#\s*torchlint\s*:\s*noqa(?P<sep>\s*:\s*(?P<codes>" + _CODES
                        + r"))?\s*$", re.I)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.I)
# a line or file directive anywhere in a comment (what a TL002 fix may take out)
NOQA_DIRECTIVE = re.compile(r"#\s*(?:torchlint\s*:\s*)?noqa(?:\s*:\s*" + _CODES + ")?", re.I)
OWN_PREFIX = "TL"  # codes of other tools are never judged


@dataclass
class Directive:
    line: int
    column: int  # 1-based column of the '#' of the directive
    codes: frozenset[str] | None  # None: bare noqa, suppresses everything on the line
    used: set[str] = field(default_factory=set)  # the written codes that suppressed something
    written: tuple[str, ...] = ()  # the codes as written, in order
    end_column: int = 0  # 1-based column just after the directive
    comment_column: int = 0  # 1-based column of the comment's '#' (the directive's or not)

    def match(self, code: str) -> str | None:
        """The written code or prefix that suppresses ``code`` (``""``: a bare noqa)."""
        if self.codes is None:
            return ""
        for written in self.codes:
            if code == written or code.startswith(written):
                return written
        return None

    def suppresses(self, code: str) -> bool:
        return self.match(code) is not None


@dataclass
class Suppressions:
    lines: dict[int, Directive] = field(default_factory=dict)
    file_codes: frozenset[str] | None = frozenset()  # None: whole file suppressed
    file_directive: Directive | None = None
    # a line that cannot hold a comment -> the line whose directive covers it
    covered_by: dict[int, int] = field(default_factory=dict)
    suppressed_any: set[int] = field(default_factory=set)  # lines with a suppressed finding

    def directive_line(self, line: int) -> int:
        return self.covered_by.get(line, line)

    def is_suppressed(self, code: str, line: int) -> bool:
        if self.file_codes is None:
            return True
        if self.file_directive is not None:
            written = self.file_directive.match(code)
            if written is not None:
                self.file_directive.used.add(written)
                return True
        target = self.directive_line(line)
        directive = self.lines.get(target)
        if directive is not None:
            written = directive.match(code)
            if written is not None:
                if written:
                    directive.used.add(written)
                self.suppressed_any.add(target)
                return True
        return False


def _scan(text: str) -> tuple[list[tuple[int, int, str]], dict[int, int]]:
    """(line, 1-based column, text) of each comment, and the lines that cannot hold a
    comment mapped to the line that can; a regex fallback if the text cannot be tokenized."""
    comments: list[tuple[int, int, str]] = []
    covered: dict[int, int] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                comments.append((tok.start[0], tok.start[1] + 1, tok.string))
            elif tok.end[0] > tok.start[0] and tok.type not in (tokenize.NL, tokenize.NEWLINE):
                for line in range(tok.start[0], tok.end[0]):  # a multi-line string
                    covered[line] = tok.end[0]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        comments = []
        for number, line in enumerate(text.splitlines(), start=1):
            hash_at = line.find("#")
            if hash_at >= 0:
                comments.append((number, hash_at + 1, line[hash_at:]))
        return comments, {}
    lines = text.splitlines()
    for index in range(len(lines) - 1, -1, -1):  # backslash continuations, last first
        number = index + 1
        if number not in covered and lines[index].endswith("\\"):
            covered[number] = covered.get(number + 1, number + 1)
    return comments, covered


def parse_suppressions(text: str) -> Suppressions:
    result = Suppressions()
    if "noqa" not in text.lower():
        return result
    comments, result.covered_by = _scan(text)
    file_codes: set[str] = set()
    for line, column, comment in comments:
        file_match = _FILE_NOQA.search(comment)
        if file_match:
            if file_match.group("codes") is None:
                result.file_codes = None
                return result
            written = tuple(c.upper() for c in _CODE.findall(file_match.group("codes")))
            file_codes.update(written)
            result.file_directive = _directive(line, column, comment, file_match, written)
            continue
        match = _NOQA.search(comment)
        if match:
            codes = match.group("codes")
            written = tuple(c.upper() for c in _CODE.findall(codes)) if codes else ()
            result.lines[line] = _directive(line, column, comment, match, written)
    if result.file_directive is not None:
        result.file_directive = Directive(
            result.file_directive.line, result.file_directive.column, frozenset(file_codes),
            written=tuple(dict.fromkeys(file_codes)), end_column=result.file_directive.end_column,
            comment_column=result.file_directive.comment_column)
    result.file_codes = frozenset(file_codes)
    return result


def _directive(line: int, column: int, comment: str, match: re.Match[str],
               written: tuple[str, ...]) -> Directive:
    return Directive(line, column + match.start(), frozenset(written) if written else None,
                     written=written, end_column=column + match.end(), comment_column=column)


# ------------------------------------------------------------------ stale directives (TL002)
def _line_starts(text: str) -> list[int]:
    starts = [0]
    for match in re.finditer(r"\r\n|\r|\n", text):
        starts.append(match.end())
    return starts


def _offset(starts: list[int], line: int, column: int) -> int:
    return starts[line - 1] + column - 1


def _removal(text: str, starts: list[int], directive: Directive, keep: list[str]) -> Edit:
    """The edit that leaves only ``keep`` in ``directive`` (none: the directive goes, and
    the line too when nothing else is on it)."""
    start = _offset(starts, directive.line, directive.column)
    end = _offset(starts, directive.line, directive.end_column)
    if keep:
        head = re.match(r"#\s*(?:torchlint\s*:\s*)?noqa\s*:\s*", text[start:end], re.I)
        prefix = head.group(0) if head else "# noqa: "
        return Edit(start, end, prefix + ", ".join(keep))
    line_start = starts[directive.line - 1]
    line_end = starts[directive.line] if directive.line < len(starts) else len(text)
    body = text[line_start:line_end].rstrip("\r\n")
    rest = text[end:line_start + len(body)]
    if not body[:directive.column - 1].strip() and not rest.strip():
        return Edit(line_start, line_end, "")  # a line of its own: remove the line
    if rest.strip().startswith("#"):  # `# noqa: TL301  # note` -> `# note`
        return Edit(start, end + len(rest) - len(rest.lstrip()), "")
    if rest.strip() and directive.column == directive.comment_column:
        return Edit(start, end, "#")  # `# noqa: TL301 why` -> `# why`: the words stay
    while start > line_start and text[start - 1] in " \t":
        start -= 1
    return Edit(start, end, "")


def stale_directives(path: str, text: str, suppressions: Suppressions,
                     enabled: Collection[str], known: Collection[str], *,
                     blanket: bool = False) -> list[Diagnostic]:
    """TL002 findings: line directives naming torchlint codes (or prefixes) that suppressed
    nothing although their rules ran, unknown torchlint codes, the same for
    ``# torchlint: noqa: CODES``, and with ``blanket`` (a preview behaviour) blanket
    ``# noqa`` comments that suppressed nothing. Each comes with
    the fix that removes the stale part (unsafe for a blanket noqa, which another tool may
    need, and for an unknown code, which a plugin not installed here may own)."""
    findings: list[Diagnostic] = []
    starts: list[int] | None = None
    whole_file = suppressions.file_directive
    if suppressions.file_codes is None or (
            whole_file is not None and whole_file.match(UNUSED_NOQA) is not None):
        return []
    directives = list(suppressions.lines.values())
    if whole_file is not None:
        directives.append(whole_file)
    for directive in directives:
        if directive.codes is not None and directive.match(UNUSED_NOQA) is not None:
            continue  # `# noqa: TL002` keeps its own line quiet
        if directive.codes is None:
            if not blanket or directive.line in suppressions.suppressed_any:
                continue  # real code keeps blanket noqa comments for flake8 and Ruff
            problem, keep, safe = "unused blanket noqa directive: nothing is reported on " \
                "this line", [], False
        else:
            unknown = [c for c in directive.written if c.startswith(OWN_PREFIX)
                       and not any(k.startswith(c) for k in known)]
            unused = [c for c in directive.written if c not in directive.used
                      and c not in unknown and c.startswith(OWN_PREFIX)
                      and any(e.startswith(c) for e in enabled)]
            if not unknown and not unused:
                continue
            where = "in this file" if directive is suppressions.file_directive else \
                "on this line"
            parts = []
            if unused:
                parts.append(f"{', '.join(unused)} {'is' if len(unused) == 1 else 'are'} not "
                             f"reported {where}")
            if unknown:
                parts.append(f"{', '.join(unknown)} {'is not a' if len(unknown) == 1 else 'are not'}"
                             f" torchlint code{'' if len(unknown) == 1 else 's'}")
            problem = "unused noqa directive: " + "; ".join(parts)
            keep = [c for c in directive.written if c not in unused and c not in unknown]
            safe = not unknown
        if starts is None:
            starts = _line_starts(text)
        edit = _removal(text, starts, directive, keep)
        fix = Fix.safe(edit) if safe else Fix.unsafe(edit)
        findings.append(Diagnostic(path, directive.line, directive.column, directive.line,
                                   directive.end_column, UNUSED_NOQA, UNUSED_NOQA_NAME,
                                   problem, fix))
    return findings


# ------------------------------------------------------------------ adding directives
def add_directives(text: str, codes_by_line: Mapping[int, Collection[str]]
                   ) -> tuple[str, int]:
    """``text`` with ``# noqa: CODES`` for the codes reported on each line (merged into a
    directive already there); and how many directives were added or extended."""
    suppressions = parse_suppressions(text)
    covered = suppressions.covered_by if suppressions.covered_by else _scan(text)[1]
    wanted: dict[int, set[str]] = {}
    for line, codes in codes_by_line.items():
        wanted.setdefault(covered.get(line, line), set()).update(codes)
    starts = _line_starts(text)
    edits: list[Edit] = []
    for line, codes in sorted(wanted.items()):
        if not 1 <= line <= len(starts):
            continue
        directive = suppressions.lines.get(line)
        if directive is not None:
            if directive.codes is None:
                continue  # a bare noqa already covers everything
            missing = sorted(c for c in codes if not directive.suppresses(c))
            if missing:
                edits.append(_removal(text, starts, directive, [*directive.written, *missing]))
            continue
        line_start = starts[line - 1]
        line_end = starts[line] if line < len(starts) else len(text)
        body = text[line_start:line_end].rstrip("\r\n")
        at = line_start + len(body)
        edits.append(Edit(at, at, f"{'  ' if body.strip() else ''}# noqa: "
                          f"{', '.join(sorted(codes))}"))
    from torchlint.fix.text import apply_edits

    return apply_edits(text, edits), len(edits)
