"""``torchlint server``: a language server (pygls) publishing torchlint's findings.

Diagnostics are published when a document is opened, changed and saved. Code actions:
a quick fix per fixable finding (safe fixes are marked preferred), and a
``source.fixAll.torchlint`` action applying every safe fix. Settings come from the
``[tool.torchlint]`` table nearest to each document, as for ``torchlint check``.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from torchlint import __version__
from torchlint.config.errors import ConfigError
from torchlint.config.loading import resolve_settings
from torchlint.config.settings import Settings
from torchlint.diagnostic import Diagnostic, Edit
from torchlint.ipython import neutralise, restore
from torchlint.run.file import lint_one
from torchlint.run.outcome import Mode
from torchlint.source import SourceFile

SOURCE = "torchlint"
FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.torchlint"
_NEWLINE = re.compile(r"\r\n|\r|\n")
_PYTHON_SUFFIXES = (".py", ".pyi")


class Offsets:
    """Character offsets of one text <-> LSP positions in the client's units."""

    def __init__(self, document: TextDocument, text: str) -> None:
        self.text = text
        self.codec = document.position_codec
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        self.lines = text.splitlines(keepends=True) or [""]

    def position(self, line: int, column: int) -> types.Position:
        """From a 1-based line and 1-based character column."""
        lines = self.lines
        return self.codec.position_to_client_units(
            lines, types.Position(line=max(0, line - 1), character=max(0, column - 1)))

    def at(self, offset: int) -> types.Position:
        index = bisect.bisect_right(self.starts, offset) - 1
        return self.position(index + 1, offset - self.starts[index] + 1)

    def edit(self, edit: Edit) -> types.TextEdit:
        return types.TextEdit(range=types.Range(start=self.at(edit.start), end=self.at(edit.end)),
                              new_text=edit.text)

    def whole(self) -> types.Range:
        return types.Range(start=types.Position(line=0, character=0), end=self.at(len(self.text)))


class TorchlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("torchlint", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.shown_errors: set[str] = set()

    # -------------------------------------------------------------- linting
    def settings_for(self, path: str) -> Settings | None:
        try:
            return resolve_settings(Path(path))
        except ConfigError as exc:
            message = f"torchlint: {exc}"
            # a pop-up once per distinct error, not on every keystroke; the log keeps all
            if message not in self.shown_errors:
                self.shown_errors.add(message)
                self.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Error, message=message))
            else:
                self.window_log_message(types.LogMessageParams(
                    type=types.MessageType.Error, message=message))
            return None

    def lint(self, document: TextDocument, mode: Mode = Mode()
             ) -> tuple[list[Diagnostic], str | None, str]:
        """(findings, fixed text or None, linted text) for an open document.

        The findings' fix offsets refer to the linted text; the fixed text is the whole
        document's new content."""
        text = document.source
        path = document.path
        if not path.endswith(_PYTHON_SUFFIXES) and document.language_id != "python":
            return [], None, text
        settings = self.settings_for(path)
        if settings is None or settings.is_excluded(path, explicit=True):
            return [], None, text
        replaced: list[str] = []
        if path.endswith(".ipynb"):  # a notebook cell (e.g. vscode-notebook-cell:…/x.ipynb#…)
            # IPython lines (%magic, !shell, %%cell magic) are set aside as in `check`;
            # whole lines are replaced, so every other line keeps its text and position
            text, replaced = neutralise(text)
        outcome = lint_one(SourceFile(path=path, text=text), settings.for_file(path), mode)
        fixed = outcome.fixed_text
        if fixed is not None and replaced:
            fixed = restore(fixed, replaced)
        return outcome.diagnostics, fixed, text

    def publish(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        findings, _, text = self.lint(document)
        offsets = Offsets(document, text)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=document.version,
            diagnostics=[to_lsp(d, offsets) for d in findings]))


def to_lsp(d: Diagnostic, offsets: Offsets) -> types.Diagnostic:
    data: dict[str, Any] = {"name": d.name}
    if d.fix is not None:
        data["fix"] = d.fix.applicability.value
    return types.Diagnostic(
        range=types.Range(start=offsets.position(d.line, d.column),
                          end=offsets.position(d.end_line, d.end_column)),
        severity=types.DiagnosticSeverity.Warning,
        code=d.code,
        source=SOURCE,
        message=d.message,
        data=data,
    )


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return p.line, p.character

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def create_server() -> TorchlintServer:
    server = TorchlintServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TorchlintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TorchlintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TorchlintServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TorchlintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=params.text_document.uri, diagnostics=[]))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix,
                                                   types.CodeActionKind.SourceFixAll,
                                                   FIX_ALL_KIND],
                                resolve_provider=False),
    )
    def code_action(ls: TorchlintServer, params: types.CodeActionParams
                    ) -> list[types.CodeAction]:
        uri = params.text_document.uri
        document = ls.workspace.get_text_document(uri)
        wanted = params.context.only
        actions: list[types.CodeAction] = []

        def allowed(kind: str) -> bool:
            return not wanted or any(kind == w or kind.startswith(f"{w}.") for w in wanted)

        findings, _, text = ls.lint(document)
        offsets = Offsets(document, text)
        if allowed(types.CodeActionKind.QuickFix.value):
            fixable = [d for d in findings if d.fix is not None]
            # safe fixes first: an editor's "apply the preferred fix" takes those
            for d in sorted(fixable, key=lambda d: (not d.fix.is_safe, d.sort_key)):  # type: ignore[union-attr]
                lsp_diagnostic = to_lsp(d, offsets)
                if not _overlaps(lsp_diagnostic.range, params.range):
                    continue
                assert d.fix is not None
                label = "" if d.fix.is_safe else " (unsafe)"
                actions.append(types.CodeAction(
                    title=f"Fix {d.code} ({d.name}){label}",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[lsp_diagnostic],
                    is_preferred=d.fix.is_safe,
                    edit=types.WorkspaceEdit(changes={
                        uri: [offsets.edit(e) for e in d.fix.resolved_edits()]}),
                ))
        if allowed(FIX_ALL_KIND) and any(d.fix is not None and d.fix.is_safe for d in findings):
            _, fixed, _ = ls.lint(document, Mode(fix=True))
            if fixed is not None and fixed != document.source:
                whole = Offsets(document, document.source).whole()
                actions.append(types.CodeAction(
                    title="torchlint: fix all safely fixable problems",
                    kind=FIX_ALL_KIND,
                    edit=types.WorkspaceEdit(changes={
                        uri: [types.TextEdit(range=whole, new_text=fixed)]}),
                ))
        return actions

    return server


def serve() -> None:
    create_server().start_io()
