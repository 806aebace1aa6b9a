"""How findings look in an editor: LSP diagnostics (severity, tags, links), the rule's
documentation, and the ``# noqa`` comment that disables a code for one line."""

from __future__ import annotations

import io
import re
import tokenize
from typing import Any

from lsprotocol import types

from torchlint.codes import SYNTAX_ERROR, UNUSED_NOQA
from torchlint.lsp.linting import Finding
from torchlint.lsp.positions import Offsets, TextChange
from torchlint.lsp.settings import EditorSettings

SOURCE = "torchlint"
SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}
# the migration family reports APIs PyTorch deprecated: editors strike them through
DEPRECATED_FAMILY = "TL7"
_NOQA = re.compile(r"#\s*noqa(?P<sep>\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?",
                   re.I)


def lsp_diagnostic(finding: Finding, offsets: Offsets, editor: EditorSettings
                   ) -> types.Diagnostic:
    d = finding.diagnostic
    tags = []
    if d.code.startswith(DEPRECATED_FAMILY):
        tags.append(types.DiagnosticTag.Deprecated)
    if d.code == UNUSED_NOQA:
        tags.append(types.DiagnosticTag.Unnecessary)
    link = editor.documentation_link(d.code, d.name)
    data: dict[str, Any] = {"name": d.name}
    if d.fix is not None:
        data["fix"] = d.fix.applicability.value
    return types.Diagnostic(
        range=offsets.range(d.line, d.column, d.end_line, d.end_column),
        severity=SEVERITY[editor.severity_of(d.code)],
        code=d.code,
        code_description=types.CodeDescription(href=link) if link else None,
        source=SOURCE,
        message=d.message,
        tags=tags or None,
        data=data,
    )


def rule_documentation(code: str) -> str | None:
    """The rule's documentation as Markdown (what ``torchlint explain`` prints)."""
    from torchlint.registry import all_rules

    rule = all_rules().get(code.upper())
    if rule is None:
        return None
    from torchlint.docs import tier

    return f"**{rule.code}** `{rule.name}` ({tier(rule)}; fix: {rule.fix_safety})\n\n{rule.doc()}"


def plain_text(markdown: str) -> str:
    """The documentation for a client that shows text as it is (a pop-up, a hover without
    Markdown): no ``**``, backticks or ``#``; code blocks indented, as in a man page."""
    lines, code = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            code = not code
        elif code:
            lines.append("    " + line if line else "")
        else:
            heading = re.match(r"#+\s+(.*)", line)
            lines.append(heading.group(1) if heading else re.sub(r"\*\*|`", "", line))
    return "\n".join(lines)


def fix_title(code: str, safe: bool) -> str:
    """What the quick fix does: the rule's ``fix_title``, else a generic title."""
    from torchlint.registry import all_rules

    rule = all_rules().get(code)
    title = (rule.fix_title if rule is not None else None) or "Apply the suggested fix"
    return f"{title} ({code})" if safe else f"{title} ({code}, unsafe fix)"


def codes_at(line_text: str, character: int) -> list[str]:
    """The rule codes written in a ``# noqa`` comment under ``character`` (0-based)."""
    found = []
    for match in _NOQA.finditer(line_text):
        if match.start() <= character <= match.end() and match.group("codes"):
            found = [c.upper() for c in re.findall(r"[A-Z]+[0-9]+", match.group("codes"),
                                                    re.I)]
    return found


def noqa_change(text: str, python: str, line: int, code: str) -> TextChange | None:
    """The change adding ``code`` to line ``line``'s ``# noqa`` (or a new ``# noqa: code``
    at its end); None where no comment can go (inside a string that goes on, after a
    backslash) or nothing is needed. ``python`` is the text to tokenize: ``text`` itself,
    or for a notebook cell the cell with its IPython lines set aside."""
    if code == SYNTAX_ERROR:
        return None
    lines = text.splitlines(keepends=True)
    if not 0 < line <= len(lines):
        return None
    comment = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(python).readline):
            if token.type == tokenize.STRING and token.start[0] <= line < token.end[0]:
                return None  # the line ends inside a string
            if token.type == tokenize.COMMENT and token.start[0] == line:
                comment = token
            if token.start[0] > line:
                break
    except (tokenize.TokenError, SyntaxError):
        pass
    start = sum(len(item) for item in lines[:line - 1])
    body = lines[line - 1].rstrip("\r\n")
    if body.endswith("\\"):
        return None
    if comment is not None:
        match = _NOQA.search(comment.string)
        if match is not None:
            if match.group("codes") is None:
                return None  # a bare noqa already silences the line
            end = start + comment.start[1] + match.end("codes")
            return TextChange(end, end, f", {code}")
    stripped = len(body.rstrip())
    return TextChange(start + stripped, start + len(body), f"  # noqa: {code}")
