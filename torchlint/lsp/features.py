"""The language server's handlers: document and notebook sync, diagnostics (pushed or
pulled), code actions, hover, commands and settings."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from lsprotocol import types

from torchlint.lsp.actions import (
    KINDS,
    NOTEBOOK_FIX_ALL,
    SHOW_DOCUMENTATION,
    finding_actions,
    fix_all_edit,
    fix_all_kinds,
    fix_all_title,
)
from torchlint.lsp.presentation import codes_at, plain_text, rule_documentation
from torchlint.lsp.server import TorchlintServer

RULE_DOCUMENTATION = "torchlint.ruleDocumentation"
APPLY_FIX_ALL = "torchlint.applyFixAll"


def _capability(root: Any, *path: str) -> Any:
    for name in path:
        root = getattr(root, name, None) if root is not None else None
    return root


def create_server() -> TorchlintServer:
    server = TorchlintServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: TorchlintServer, params: types.InitializeParams) -> None:
        caps = params.capabilities
        ls.pull = _capability(caps, "text_document", "diagnostic") is not None
        resolve = _capability(caps, "text_document", "code_action", "resolve_support")
        ls.resolve_edits = bool(
            _capability(caps, "text_document", "code_action", "data_support")
            and resolve is not None and "edit" in resolve.properties)
        ls.versioned_edits = bool(
            _capability(caps, "workspace", "workspace_edit", "document_changes"))
        ls.show_document = bool(_capability(caps, "window", "show_document", "support"))
        formats = _capability(caps, "text_document", "hover", "content_format")
        ls.hover_markdown = not formats or types.MarkupKind.Markdown in formats
        ls.refresh = bool(_capability(caps, "workspace", "diagnostics", "refresh_support"))
        ls.apply_settings(params.initialization_options)
        if ls.pull:  # pulled by clients that can, never pushed to them as well
            @ls.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
                identifier="torchlint", inter_file_dependencies=False,
                workspace_diagnostics=False))
            async def pull(ls: TorchlintServer, params: types.DocumentDiagnosticParams
                           ) -> types.DocumentDiagnosticReport:
                uri = params.text_document.uri
                snapshot = ls.snapshot(uri)
                known = ls.results.get(snapshot.name) if snapshot is not None else None
                fresh = known is not None and snapshot is not None and \
                    known.linted.snapshot.key == snapshot.key
                if fresh or (known is not None and not known.editor.lint_on_change):
                    result = known
                else:  # debounced: a newer edit makes the client cancel this request
                    result = await ls.current(uri, ls.lint_delay(uri), reuse=True)
                if result is None:
                    return types.RelatedFullDocumentDiagnosticReport(items=[])
                if params.previous_result_id == result.result_id:
                    return types.RelatedUnchangedDocumentDiagnosticReport(
                        result_id=result.result_id)
                return types.RelatedFullDocumentDiagnosticReport(
                    items=ls.diagnostics(result, uri), result_id=result.result_id)

    @server.feature(types.INITIALIZED)
    def initialized(ls: TorchlintServer, params: types.InitializedParams) -> None:
        ls.check_rules()  # a server that cannot lint says so now, not never

    # -------------------------------------------------------------- text documents
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TorchlintServer, params: types.DidOpenTextDocumentParams) -> None:
        if not ls.pull:
            ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TorchlintServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if not ls.pull and ls.client_settings.for_path(
                ls.workspace.get_text_document(uri).path).lint_on_change:
            ls.schedule(uri, ls.lint_delay(uri), reuse=True)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TorchlintServer, params: types.DidSaveTextDocumentParams) -> None:
        _saved(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TorchlintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.forget(uri, [uri])

    # -------------------------------------------------------------- notebooks
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: TorchlintServer, params: types.DidOpenNotebookDocumentParams
                      ) -> None:
        if not ls.pull:
            ls.schedule(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: TorchlintServer, params: types.DidChangeNotebookDocumentParams
                        ) -> None:
        uri = params.notebook_document.uri
        structure = params.change.cells.structure if params.change.cells else None
        for closed in (structure.did_close or []) if structure else []:
            ls.clear(closed.uri)
        snapshot = ls.snapshot(uri)
        if ls.pull or snapshot is None:
            return
        if structure or ls.client_settings.for_path(snapshot.path).lint_on_change:
            ls.schedule(uri, ls.lint_delay(uri), reuse=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: TorchlintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        _saved(ls, params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: TorchlintServer, params: types.DidCloseNotebookDocumentParams
                       ) -> None:
        ls.forget(params.notebook_document.uri, [c.uri for c in params.cell_text_documents])

    # -------------------------------------------------------------- code actions
    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=KINDS, resolve_provider=True))
    async def code_action(ls: TorchlintServer, params: types.CodeActionParams
                          ) -> list[types.CodeAction]:
        uri = params.text_document.uri
        result = await ls.current(uri)
        if result is None:
            return []
        builder = ls.edit_builder(result)
        only = params.context.only
        actions = finding_actions(uri, result.linted, result.editor, params.range, only,
                                  builder)
        # without resolve, fix-all is computed only when asked for by kind: not on every
        # request for the actions at the cursor
        kinds = fix_all_kinds(uri, result.linted, only, result.editor.unsafe_fixes) \
            if only or ls.resolve_edits else []
        new_texts = await ls.fixed_texts(result) if kinds and not ls.resolve_edits else {}
        for kind in kinds:
            action = types.CodeAction(title=fix_all_title(kind), kind=kind,
                                      data={"uri": uri, "kind": kind})
            if not ls.resolve_edits:
                action.edit = fix_all_edit(uri, kind, new_texts, builder)
                if action.edit is None:
                    continue
            actions.append(action)
        return actions

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def resolve(ls: TorchlintServer, action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        uri, kind = data.get("uri"), data.get("kind")
        if not isinstance(uri, str) or not isinstance(kind, str) or action.edit is not None:
            return action
        result = await ls.current(uri)
        if result is not None:
            new_texts = await ls.fixed_texts(result)
            action.edit = fix_all_edit(uri, kind, new_texts, ls.edit_builder(result))
        return action

    # -------------------------------------------------------------- hover
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: TorchlintServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        result = await ls.current(uri)
        if result is None:
            return None
        document = result.linted.snapshot.document(uri)
        if document is None:
            return None
        offsets = ls.offsets(document.text)
        line, column = offsets.line_column(params.position)
        codes, where = [], None
        for finding in result.linted.findings.get(document.uri, []):
            d = finding.diagnostic
            if (d.line, d.column) <= (line, column) <= (d.end_line, max(d.end_column,
                                                                           d.column + 1)):
                if d.code not in codes:
                    codes.append(d.code)
                where = where or offsets.range(d.line, d.column, d.end_line, d.end_column)
        if not codes and 0 < line <= len(offsets.lines):
            codes = codes_at(offsets.lines[line - 1], column - 1)
        pages = [page for page in map(rule_documentation, codes) if page]
        if not pages:
            return None
        if ls.hover_markdown:
            contents = types.MarkupContent(kind=types.MarkupKind.Markdown,
                                           value="\n\n---\n\n".join(pages))
        else:
            contents = types.MarkupContent(kind=types.MarkupKind.PlainText, value="\n\n".join(
                map(plain_text, pages)))
        return types.Hover(contents=contents, range=where)

    # -------------------------------------------------------------- commands
    @server.command(SHOW_DOCUMENTATION)
    async def show_documentation(ls: TorchlintServer, *args: Any) -> str | None:
        code = _first_string(args)
        if code is None:
            return None
        return await ls.show_documentation(code, ls.client_settings.global_settings)

    @server.command(RULE_DOCUMENTATION)
    def documentation(ls: TorchlintServer, *args: Any) -> str | None:
        code = _first_string(args)
        return rule_documentation(code) if code else None

    @server.command(APPLY_FIX_ALL)
    async def apply_fix_all(ls: TorchlintServer, *args: Any) -> bool:
        uri = _first_string(args)
        result = await ls.current(uri) if uri else None
        if uri is None or result is None:
            return False
        kind = NOTEBOOK_FIX_ALL if result.linted.snapshot.notebook else "source.fixAll.torchlint"
        edit = fix_all_edit(uri, kind, await ls.fixed_texts(result), ls.edit_builder(result))
        if edit is None:
            return False
        applied = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(
            edit=edit, label="torchlint: Fix all"))
        return bool(applied.applied)

    # -------------------------------------------------------------- settings
    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def configuration(ls: TorchlintServer, params: types.DidChangeConfigurationParams
                            ) -> None:
        settings = params.settings
        if settings is None or settings == {}:
            try:  # the client only says something changed: ask for the torchlint section
                answer = await ls.workspace_configuration_async(types.ConfigurationParams(
                    items=[types.ConfigurationItem(section="torchlint")]))
                settings = answer[0] if answer else None
            except Exception:  # noqa: BLE001 - a client without workspace/configuration
                settings = None
        if settings is not None:
            ls.apply_settings(settings)
        ls.relint_all()

    return server


def _saved(ls: TorchlintServer, uri: str) -> None:
    ls.projects.clear()  # files on disk changed: the project is read again
    ls.history.pop(unquote(uri), None)  # and the saved file is linted afresh
    if ls.pull:
        if ls.refresh:
            ls.results.pop(unquote(uri), None)
            ls.workspace_diagnostic_refresh(None)
        return
    ls.schedule(uri)


def _first_string(args: Any) -> str | None:
    """Commands get their arguments as a list (pygls passes it whole or spread)."""
    for value in args:
        if isinstance(value, str):
            return value
        if isinstance(value, (list, tuple)):
            found = _first_string(value)
            if found is not None:
                return found
    return None
