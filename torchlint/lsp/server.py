"""``torchlint server``: the language server (pygls).

Lints are debounced (``lintDelay``) and run one at a time in a worker thread, off the
event loop. A lint superseded by a newer edit is cancelled before it starts, stopped at its
next checkpoint (after the screen, before libcst parses the file), or its result is
dropped, so diagnostics are only ever published for the version the editor has. A thread
rather than a process: the lint needs the loaded engine and the project knowledge the
server keeps, and a process would have to be forked from a threaded server (unsafe; no
fork on Windows, not the default on macOS) or spawned anew, importing libcst and the rules
again (0.5 s of CPU, a quarter of a 7,000-line file's lint).

A text that was linted before (an undo, an edit and its reverse within the delay) is not
linted again: each document keeps its last results by the digest of its text, valid while
the settings and the project's files they learned from are unchanged. Saving a file lints
it afresh. Diagnostics are pulled (``textDocument/diagnostic``) by clients that can,
pushed to the others.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import re
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from torchlint import __version__
from torchlint.codes import SYNTAX_ERROR
from torchlint.config.errors import ConfigError
from torchlint.config.file_settings import FileSettings
from torchlint.config.settings import Settings
from torchlint.lsp.actions import EditBuilder
from torchlint.lsp.linting import (Document, Linted, Snapshot, Superseded, fix_all,
                                   lint_snapshot)
from torchlint.lsp.positions import Offsets
from torchlint.lsp.presentation import lsp_diagnostic, plain_text, rule_documentation
from torchlint.lsp.protocol import TorchlintProtocol
from torchlint.lsp.settings import ClientSettings, EditorSettings, Resolver

if TYPE_CHECKING:
    from torchlint.analysis.project import Project

logger = logging.getLogger(__name__)
HISTORY = 4  # results kept per document, by the digest of its text
_PYTHON_SUFFIXES = (".py", ".pyi")
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(
        notebook="*", cells=[types.NotebookCellLanguage(language="python")])],
    save=True)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a lint runs. A lint builds a libcst tree of
    millions of objects that live until it ends, and each collection of the oldest
    generation walks them all: a fifth of a lint's CPU on a 7,000-line file. Reference
    counting still frees what is dropped; what a lint leaves in cycles is collected after
    it, as usual. The cost is memory: the cycles a lint makes wait for its end (about 50 MB
    more at the peak of a 7,000-line file; documents over ``max-file-size`` are not
    linted)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class Result:
    linted: Linted
    editor: EditorSettings
    settings: FileSettings | None  # None: not linted (excluded or a bad configuration)
    result_id: str


class TorchlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("torchlint", __version__, protocol_cls=TorchlintProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=NOTEBOOK_SYNC)
        self.client_settings = ClientSettings()
        self.resolver = Resolver()
        self.shown_errors: set[str] = set()
        self.in_force: dict[str, str] = {}  # folder -> the settings last logged for it
        self.pull = False  # the client pulls diagnostics
        self.resolve_edits = False  # the client resolves a code action's edit
        self.versioned_edits = False  # the client takes versioned document edits
        self.show_document = False
        self.hover_markdown = True  # the client renders Markdown in a hover
        self.refresh = False  # the client re-pulls diagnostics when asked
        # one lint at a time, off the event loop (libcst holds the GIL: more threads would
        # not lint faster; a lint for a stale version stops at its checkpoint)
        self.linter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchlint-lint")
        self.results: dict[str, Result] = {}  # by subject uri (document or notebook)
        self.pending: dict[str, tuple[tuple[object, ...], asyncio.Task[Result | None]]] = {}
        self.published: dict[str, set[str]] = {}  # subject -> document uris published
        # subject -> (content digest, settings) -> its lint, the newest last
        self.history: dict[str, OrderedDict[tuple[object, ...], Linted]] = {}
        # the project knowledge, one per configuration root, kept between lints
        self.projects: dict[tuple[str, ...], Project] = {}
        self.runs = 0  # lints started
        self._counter = 0
        self._docs_dir: tempfile.TemporaryDirectory[str] | None = None

    # -------------------------------------------------------------- what to lint
    def snapshot(self, uri: str) -> Snapshot | None:
        """The document (or the whole notebook of a cell) ``uri`` belongs to, as it is."""
        workspace = self.workspace
        notebook = workspace.get_notebook_document(cell_uri=uri) or \
            workspace.get_notebook_document(notebook_uri=uri)
        if notebook is not None:
            documents = []
            for index, cell in enumerate(notebook.cells, start=1):
                if cell.kind != types.NotebookCellKind.Code:
                    continue
                if unquote(cell.document) not in workspace.text_documents:
                    continue
                text = workspace.get_text_document(cell.document)
                if text.language_id not in (None, "python"):
                    continue
                documents.append(Document(cell.document, text.version, text.source, index))
            return Snapshot(notebook.uri, to_fs_path(notebook.uri) or notebook.uri,
                            tuple(documents), notebook=True)
        if unquote(uri) not in workspace.text_documents:
            return None
        document = workspace.get_text_document(uri)
        path = document.path
        lone_cell = uri.startswith("vscode-notebook-cell:") or path.endswith(".ipynb")
        if not (lone_cell or path.endswith(_PYTHON_SUFFIXES)
                or document.language_id == "python"):
            return None
        return Snapshot(document.uri, path,
                        (Document(document.uri, document.version, document.source),),
                        notebook=lone_cell)

    def _root(self, path: str) -> str | None:
        best = None
        for folder in self.workspace.folders.values():
            root = to_fs_path(folder.uri)
            if root and (path == root or path.startswith(root.rstrip("/") + "/")) and \
                    (best is None or len(root) > len(best)):
                best = root
        return best or (to_fs_path(self.workspace.root_uri) if self.workspace.root_uri
                        else None)

    def prepare(self, snapshot: Snapshot) -> tuple[EditorSettings, FileSettings | None]:
        editor = self.client_settings.for_path(snapshot.path)
        root = self._root(snapshot.path)
        try:
            settings = self.resolver.settings(snapshot.path, editor, root)
        except ConfigError as exc:
            # as Ruff's server does: lint with the defaults (and the editor's selection)
            # until the configuration is fixed, rather than not at all
            try:
                settings = self.resolver.fallback(snapshot.path, editor, root)
            except ConfigError:
                self.report_problem(f"torchlint: {exc}")
                return editor, None
            self.report_problem(f"torchlint: {exc}; until it is fixed, files are linted "
                                f"with {self.resolver.describe(settings, editor)}")
        if settings.is_excluded(snapshot.path, explicit=True):
            return editor, None
        file_settings = settings.for_file(snapshot.path)
        self.log_in_force(snapshot.path, settings, editor, file_settings)
        project = file_settings.project
        if project is not None:  # what the project taught earlier lints is kept
            kept = self.projects.setdefault(project.extra_roots, project)
            if kept is not project:
                file_settings = replace(file_settings, project=kept)
        return editor, file_settings

    def log_in_force(self, path: str, settings: Settings, editor: EditorSettings,
                     file_settings: FileSettings) -> None:
        """One log line each time the settings a folder is linted with change."""
        folder = str(Path(settings.config_file).parent) if settings.config_file and \
            not self.resolver.is_inline(settings.config_file) else \
            (self._root(path) or str(Path(path).parent))
        rules = len(file_settings.codes - {SYNTAX_ERROR})
        line = (f"torchlint: settings in force for {folder}: "
                f"{self.resolver.describe(settings, editor)} ({rules} rules on)")
        if self.in_force.get(folder) != line:
            self.in_force[folder] = line
            self.window_log_message(types.LogMessageParams(
                type=types.MessageType.Info, message=line))

    def report_problem(self, message: str,
                       level: types.MessageType = types.MessageType.Error,
                       key: str | None = None) -> None:
        """A pop-up once per distinct problem (``key``, else the message), not on every
        keystroke; the log has all."""
        if (key or message) not in self.shown_errors:
            self.shown_errors.add(key or message)
            self.window_show_message(types.ShowMessageParams(type=level, message=message))
        else:
            self.window_log_message(types.LogMessageParams(type=level, message=message))

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls's report of a failure outside a request: one line naming it, not the
        traceback (that goes to the server's log). A failed request is answered with an
        error response instead."""
        if source is FeatureRequestError:
            return
        message = getattr(error, "message", None) or str(error)
        first = message.strip().splitlines()[-1] if message.strip() else type(error).__name__
        self.report_problem(f"torchlint: {first} (the traceback is in the server's log)")

    def check_rules(self) -> bool:
        """Whether the rules load; if not, the user is told why nothing is linted."""
        from torchlint.registry import all_rules

        try:
            all_rules()
        except Exception as exc:  # noqa: BLE001 - whatever stops the rules from loading
            self.report_problem(
                f"torchlint cannot lint: its rules did not load ({type(exc).__name__}: "
                f"{exc}). Reinstall torchlint in this environment "
                "(pip install '/path/to/torchlint[lsp]') and restart the server.")
            return False
        return True

    # -------------------------------------------------------------- linting
    def lint_delay(self, uri: str) -> float:
        """Seconds of quiet after an edit of ``uri`` before it is linted (``lintDelay``)."""
        snapshot = self.snapshot(uri)
        path = snapshot.path if snapshot is not None else to_fs_path(uri) or uri
        return self.client_settings.for_path(path).lint_delay

    def schedule(self, uri: str, delay: float = 0.0, reuse: bool = False
                 ) -> asyncio.Task[Result | None] | None:
        """Lint ``uri``'s subject after ``delay`` seconds of quiet; a newer request for the
        same subject cancels an older one that has not finished. ``reuse``: a text linted
        before is answered from its earlier lint (as you type; not on save)."""
        snapshot = self.snapshot(uri)
        if snapshot is None:
            return None
        key = snapshot.key
        old = self.pending.get(snapshot.name)
        if old is not None and not old[1].done():
            if old[0] == key:
                return old[1]
            old[1].cancel()
        task = asyncio.ensure_future(self._lint(snapshot, delay, reuse))
        self.pending[snapshot.name] = (key, task)
        return task

    async def _lint(self, snapshot: Snapshot, delay: float, reuse: bool) -> Result | None:
        if delay:
            await asyncio.sleep(delay)  # a newer edit cancels us here
        editor, settings = self.prepare(snapshot)
        previous = self.results.get(snapshot.name)
        if settings is None:
            linted = Linted(snapshot, {d.uri: [] for d in snapshot.documents})
        else:
            content = (snapshot.digest, settings.fingerprint, settings.max_file_size,
                       settings.project.extra_roots if settings.project else None)
            history = self.history.setdefault(snapshot.name, OrderedDict())
            known = history.get(content) if reuse else None
            if known is not None and known.still_valid():
                history.move_to_end(content)
                if previous is not None and previous.settings == settings and \
                        previous.linted.snapshot.digest == snapshot.digest:
                    # the text on screen is the one last linted: its diagnostics stand
                    self.results[snapshot.name] = replace(
                        previous, linted=previous.linted.moved_to(snapshot), editor=editor)
                    return self.results[snapshot.name]
                linted = known.moved_to(snapshot)
            else:
                found, completed = await self._run(snapshot, settings)
                if found is None:
                    return None  # superseded while it ran
                linted = found
                if completed and not linted.error:
                    history[content] = linted
                    while len(history) > HISTORY:
                        history.popitem(last=False)
        current = self.snapshot(snapshot.uri)
        if current is None or current.key != snapshot.key:
            return None  # the editor moved on: never show findings of an older text
        if linted.error:
            self.window_log_message(types.LogMessageParams(
                type=types.MessageType.Warning, message=f"torchlint: {linted.error}"))
        if linted.skipped:  # over max-file-size: say why there are no findings
            self.report_problem(f"torchlint: {snapshot.path}: {linted.skipped}",
                                types.MessageType.Warning, key=f"skipped {snapshot.path}")
        self._counter += 1
        result = Result(linted, editor, settings, str(self._counter))
        self.results[snapshot.name] = result
        if not self.pull:
            self.publish(result)
        elif snapshot.notebook and self.refresh and previous is not None:
            # a cell's findings depend on the other cells: let the client pull them again
            self.workspace_diagnostic_refresh(None)
        return result

    async def _run(self, snapshot: Snapshot, settings: FileSettings
                   ) -> tuple[Linted | None, bool]:
        """Lint ``snapshot`` in the worker thread: its findings (None when a newer version
        superseded it: the lint stopped at its next checkpoint) and whether the lint
        completed (False: it failed, and the user was told)."""
        self.runs += 1
        stop = threading.Event()
        loop = asyncio.get_running_loop()

        def checkpoint() -> None:
            if stop.is_set():
                raise Superseded

        def work() -> Linted | None:
            started = time.thread_time()
            outcome = "failed linting"
            try:
                with _collector_paused():
                    linted = lint_snapshot(snapshot, settings, checkpoint)
                outcome = "linted"
                return linted
            except Superseded:
                outcome = "stopped linting"
                return None
            finally:  # one line per lint run, its result used or not
                loop.call_soon_threadsafe(self._log_run, snapshot, outcome,
                                          time.thread_time() - started)

        try:
            return await loop.run_in_executor(self.linter, work), True
        except asyncio.CancelledError:
            stop.set()  # a newer version is waiting: stop at the next checkpoint
            raise
        except Exception as exc:  # noqa: BLE001 - said to the user, never silent
            logger.error("linting %s failed", snapshot.path, exc_info=exc)
            self.report_problem(f"torchlint cannot lint {snapshot.path}: "
                                f"{type(exc).__name__}: {exc}")
            return Linted(snapshot, {d.uri: [] for d in snapshot.documents}), False

    def _log_run(self, snapshot: Snapshot, outcome: str, cpu: float) -> None:
        versions = ", ".join(str(d.version) for d in snapshot.documents)
        self.window_log_message(types.LogMessageParams(
            type=types.MessageType.Log,
            message=f"torchlint: {outcome} {snapshot.path} (version {versions or '-'}) "
                    f"in {cpu:.3f} s of CPU"))

    async def current(self, uri: str, delay: float = 0.0, reuse: bool = False
                      ) -> Result | None:
        """The lint of ``uri``'s subject as the editor has it now."""
        for _ in range(100):
            snapshot = self.snapshot(uri)
            if snapshot is None:
                return None
            known = self.results.get(snapshot.name)
            if known is not None and known.linted.snapshot.key == snapshot.key:
                return known
            task = self.schedule(uri, delay, reuse)
            if task is None:
                return None
            try:
                result = await asyncio.shield(task)
            except asyncio.CancelledError:
                if task.cancelled():  # superseded by a newer edit: lint that one
                    continue
                raise
            if result is not None:
                return result
        return None

    def diagnostics(self, result: Result, uri: str) -> list[types.Diagnostic]:
        document = result.linted.snapshot.document(uri)
        if document is None:
            return []
        offsets = self.offsets(document.text)
        return [lsp_diagnostic(f, offsets, result.editor)
                for f in result.linted.findings.get(document.uri, [])]

    def publish(self, result: Result) -> None:
        snapshot = result.linted.snapshot
        for document in snapshot.documents:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=document.uri, version=document.version,
                diagnostics=self.diagnostics(result, document.uri)))
        now = {d.uri for d in snapshot.documents}
        for gone in self.published.get(snapshot.name, set()) - now:  # a deleted cell
            self.clear(gone)
        self.published[snapshot.name] = now

    def clear(self, uri: str) -> None:
        if not self.pull:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, diagnostics=[]))

    def forget(self, subject: str, documents: list[str]) -> None:
        subject = unquote(subject)
        pending = self.pending.pop(subject, None)
        if pending is not None:
            pending[1].cancel()
        self.results.pop(subject, None)
        self.history.pop(subject, None)
        for uri in documents + sorted(self.published.pop(subject, set()) - set(documents)):
            self.clear(uri)

    def relint_all(self) -> None:
        """After a settings change: every open document again."""
        self.results.clear()
        self.projects.clear()
        if self.pull:
            if self.refresh:
                self.workspace_diagnostic_refresh(None)
            return
        subjects = set()
        for uri in list(self.workspace.text_documents):
            snapshot = self.snapshot(uri)
            if snapshot is not None and snapshot.name not in subjects:
                subjects.add(snapshot.name)
                self.schedule(uri)

    # -------------------------------------------------------------- helpers
    def offsets(self, text: str) -> Offsets:
        return Offsets(self.workspace.position_codec, text)

    def edit_builder(self, result: Result) -> EditBuilder:
        snapshot = result.linted.snapshot
        texts = {d.uri: d.text for d in snapshot.documents}
        return EditBuilder(result.linted, lambda uri: self.offsets(texts.get(uri, "")),
                           self.versioned_edits)

    async def fixed_texts(self, result: Result) -> dict[str, str]:
        if result.settings is None:
            return {}
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.linter, fix_all, result.linted.snapshot,
                                          result.settings, result.editor.unsafe_fixes)

    async def show_documentation(self, code: str, editor: EditorSettings) -> str | None:
        markdown = rule_documentation(code)
        if markdown is None:
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Warning, message=f"torchlint: no rule {code!r}"))
            return None
        link = editor.documentation_link(code.upper(), markdown.split("`")[1])
        if self.show_document:
            if link:
                target, external = link, True
            else:  # the page, written where the editor can open it
                if self._docs_dir is None:
                    self._docs_dir = tempfile.TemporaryDirectory(prefix="torchlint-docs-")
                page = Path(self._docs_dir.name) / f"{code.upper()}.md"
                page.write_text(markdown + "\n", encoding="utf-8")
                target, external = from_fs_path(str(page)) or str(page), False
            await self.window_show_document_async(types.ShowDocumentParams(
                uri=target, external=external, take_focus=True))
        else:  # a pop-up shows text as it is: its first paragraph, without Markdown
            header, *rest = markdown.split("\n\n")
            first = plain_text(re.sub(r"\A#+\s.*\n", "", rest[0]) if rest else "")
            header, first = plain_text(header), " ".join(first.split())
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Info,
                message=f"{header}: {first} (the whole page: torchlint explain "
                        f"{code.upper()})"))
        return markdown

    def apply_settings(self, options: Any) -> None:
        settings, problems = ClientSettings.from_options(options)
        self.client_settings = settings
        if problems:  # one pop-up for them all: what was skipped, and that the rest applies
            self.report_problem("torchlint: editor settings skipped: " + "; ".join(problems)
                                + ". The other settings apply.", types.MessageType.Warning)
