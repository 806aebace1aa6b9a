"""Turn a rule's fix, written against syntax-tree nodes, into text edits of the source."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from torchlint.diagnostic import Edit, Fix, ImportNeed
from torchlint.engine.positions import Locator


def import_anchor(module: cst.Module) -> list[cst.CSTNode]:
    """The statement after which a new import line goes (and the first statement)."""
    anchor: cst.CSTNode | None = None
    for index, stmt in enumerate(module.body):
        if isinstance(stmt, cst.SimpleStatementLine):
            is_doc = index == 0 and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr) \
                and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
            if is_doc or all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
                anchor = stmt
                continue
        break
    if anchor is not None:
        return [anchor]
    return [module.body[0]] if module.body else []


def resolve_fix(fix: Fix, module: cst.Module, locator: Locator) -> Fix:
    newline = module.default_newline
    text = locator.text
    edits: list[Edit] = []
    for edit in fix.edits:
        if isinstance(edit, Edit):
            edits.append(edit)
            continue
        node = edit.node
        # statements and decorators own their leading comment lines and trailing newline
        is_statement = isinstance(node, (cst.BaseStatement, cst.BaseSmallStatement,
                                         cst.Decorator))
        start, end = locator.range(node) if is_statement else locator.raw_range(node)
        if edit.kind == "replace":
            edits.append(Edit(start, end, edit.text))
        elif edit.kind == "insert_before":
            edits.append(Edit(start, start, edit.text))
        elif edit.kind == "insert_after":
            edits.append(Edit(end, end, edit.text))
        elif edit.kind == "insert_line_before":
            line_start = locator.line_start(start)
            indent = text[line_start:start]
            if indent.strip():
                edits.append(Edit(start, start, f"{edit.text}; "))
            else:
                edits.append(Edit(line_start, line_start, f"{indent}{edit.text}{newline}"))
        elif edit.kind == "delete_line":
            edits.append(Edit(locator.line_start(start), locator.line_end(end), ""))
    for need in fix.imports:
        edits.append(_import_edit(need, module, locator, newline))
    return replace(fix, edits=tuple(edits), imports=fix.imports)


def _import_edit(need: ImportNeed, module: cst.Module, locator: Locator, newline: str) -> Edit:
    anchors = import_anchor(module)
    if not anchors:
        return Edit(len(locator.text), len(locator.text), need.line + newline)
    anchor = anchors[0]
    text = locator.text
    if anchor is not module.body[0] or _is_import_or_doc(anchor):
        _, end = locator.raw_range(anchor)
        prefix = "" if end > 0 and text[end - 1] in "\r\n" else newline
        return Edit(end, end, f"{prefix}{need.line}{newline}")
    start, _ = locator.range(anchor)
    line_start = locator.line_start(start)
    return Edit(line_start, line_start, need.line + newline)


def _is_import_or_doc(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom))
        or (isinstance(s, cst.Expr) and isinstance(s.value, (cst.SimpleString,
                                                            cst.ConcatenatedString)))
        for s in stmt.body
    )
