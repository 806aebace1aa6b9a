"""Code actions: a quick fix per fixable finding, "Disable TLxxx for this line", "Show
documentation for TLxxx", and fix-all as the smallest edits, each edit tied to the
version of the document it was computed on (a client refuses it on a newer one)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lsprotocol import types

from torchlint.ipython import neutralise
from torchlint.lsp.linting import DocEdit, Finding, Linted
from torchlint.lsp.positions import Offsets, minimal_changes
from torchlint.lsp.presentation import fix_title, lsp_diagnostic, noqa_change
from torchlint.lsp.settings import EditorSettings

FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.torchlint"
NOTEBOOK_FIX_ALL = f"notebook.{FIX_ALL}"
SHOW_DOCUMENTATION = "torchlint.showDocumentation"
KINDS = [types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL,
         NOTEBOOK_FIX_ALL]


def wanted(only: Sequence[str] | None, kind: str) -> bool:
    """Whether the request's ``only`` (kinds and their parents) admits ``kind``."""
    return not only or any(kind == w or kind.startswith(f"{w}.") for w in only)


class EditBuilder:
    """Workspace edits over the documents of one lint, at their linted versions."""

    def __init__(self, linted: Linted, offsets: Callable[[str], Offsets],
                 versioned: bool) -> None:
        self.linted = linted
        self.offsets = offsets
        self.versioned = versioned

    def build(self, edits: Mapping[str, list[types.TextEdit]]) -> types.WorkspaceEdit:
        if not self.versioned:
            return types.WorkspaceEdit(changes={uri: list(e) for uri, e in edits.items()})
        changes: list[Any] = []
        for uri, text_edits in edits.items():
            document = self.linted.snapshot.document(uri)
            version = document.version if document is not None else None
            changes.append(types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri,
                                                                            version=version),
                edits=list(text_edits)))
        return types.WorkspaceEdit(document_changes=changes)

    def of_fix(self, edits: Sequence[DocEdit]) -> types.WorkspaceEdit:
        by_uri: dict[str, list[types.TextEdit]] = {}
        for edit in edits:
            offsets = self.offsets(edit.uri)
            by_uri.setdefault(edit.uri, []).append(types.TextEdit(
                range=offsets.range(edit.line, edit.column, edit.end_line, edit.end_column),
                new_text=edit.text))
        return self.build(by_uri)

    def of_texts(self, new_texts: Mapping[str, str]) -> types.WorkspaceEdit | None:
        """The smallest edits turning each document into its new text."""
        by_uri: dict[str, list[types.TextEdit]] = {}
        for uri, new in new_texts.items():
            document = self.linted.snapshot.document(uri)
            if document is None:
                continue
            offsets = self.offsets(uri)
            changes = minimal_changes(document.text, new)
            if changes:
                by_uri[uri] = [offsets.edit(change) for change in changes]
        return self.build(by_uri) if by_uri else None


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return p.line, p.character

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def finding_actions(uri: str, linted: Linted, editor: EditorSettings, selection: types.Range,
                    only: Sequence[str] | None, builder: EditBuilder) -> list[types.CodeAction]:
    """Quick fixes, disable comments and documentation for the findings in ``selection``."""
    if not wanted(only, types.CodeActionKind.QuickFix.value):
        return []
    document = linted.snapshot.document(uri)
    if document is None:
        return []
    uri = document.uri
    offsets = builder.offsets(uri)
    here: list[tuple[Finding, types.Diagnostic]] = []
    for finding in linted.findings.get(uri, []):
        diagnostic = lsp_diagnostic(finding, offsets, editor)
        if _overlaps(diagnostic.range, selection):
            here.append((finding, diagnostic))
    actions: list[types.CodeAction] = []
    # safe fixes first: an editor's "apply the preferred fix" takes those
    fixable = [(f, d) for f, d in here if f.edits is not None and f.diagnostic.fix is not None]
    for finding, diagnostic in sorted(fixable, key=lambda p: not p[0].diagnostic.fix.is_safe):  # type: ignore[union-attr]
        assert finding.edits is not None and finding.diagnostic.fix is not None
        safe = finding.diagnostic.fix.is_safe
        actions.append(types.CodeAction(
            title=fix_title(finding.diagnostic.code, safe), kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic], is_preferred=safe, edit=builder.of_fix(finding.edits)))
    python = neutralise(document.text)[0] if linted.snapshot.notebook else document.text
    seen: set[tuple[str, int]] = set()
    for finding, diagnostic in here:
        code, line = finding.diagnostic.code, finding.diagnostic.line
        if (code, line) in seen:
            continue
        seen.add((code, line))
        change = noqa_change(document.text, python, line, code)
        if change is not None:
            actions.append(types.CodeAction(
                title=f"Disable {code} for this line", kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                edit=builder.build({uri: [offsets.edit(change)]})))
    for code in sorted({f.diagnostic.code for f, _ in here}):
        actions.append(types.CodeAction(
            title=f"Show documentation for {code}", kind=types.CodeActionKind.QuickFix,
            command=types.Command(title=f"Show documentation for {code}",
                                  command=SHOW_DOCUMENTATION, arguments=[code])))
    return actions


def fix_all_kinds(uri: str, linted: Linted, only: Sequence[str] | None, unsafe: bool
                  ) -> list[str]:
    """The fix-all kinds to offer for ``uri``: ``source.fixAll.torchlint`` (this document)
    and, for a notebook cell, ``notebook.source.fixAll.torchlint`` (every cell)."""
    def fixable(findings: Sequence[Finding]) -> bool:
        return any(f.diagnostic.fix is not None and (f.diagnostic.fix.is_safe or unsafe)
                   for f in findings)

    document = linted.snapshot.document(uri)
    kinds = []
    if document is not None and wanted(only, FIX_ALL) and \
            fixable(linted.findings.get(document.uri, [])):
        kinds.append(FIX_ALL)
    if linted.snapshot.notebook and only and wanted(only, NOTEBOOK_FIX_ALL) and \
            fixable([f for found in linted.findings.values() for f in found]):
        kinds.append(NOTEBOOK_FIX_ALL)
    return kinds


def fix_all_title(kind: str) -> str:
    where = "in the notebook" if kind == NOTEBOOK_FIX_ALL else ""
    return " ".join(["torchlint: Fix all auto-fixable problems", where]).strip()


def fix_all_edit(uri: str, kind: str, new_texts: Mapping[str, str], builder: EditBuilder
                 ) -> types.WorkspaceEdit | None:
    """Fix-all for ``uri`` alone, or for every cell of its notebook."""
    if kind != NOTEBOOK_FIX_ALL:
        document = builder.linted.snapshot.document(uri)
        new_texts = {u: t for u, t in new_texts.items()
                     if document is not None and u == document.uri}
    return builder.of_texts(new_texts)
