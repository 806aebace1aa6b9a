"""When the language server lints: bursts of edits coalesced, superseded lints stopped or
dropped, texts linted before answered from their earlier lint. The server runs in this
process with its editor (publishing, logging) recorded; its lints run as in an editor."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.workspace import Workspace  # noqa: E402

import torchlint.lsp.server as server_module  # noqa: E402
from torchlint.lsp.features import _saved, create_server  # noqa: E402
from torchlint.lsp.linting import Document, Linted, Snapshot, Superseded, lint_snapshot, shown_only  # noqa: E402
from torchlint.lsp.server import TorchlintServer  # noqa: E402
from torchlint.lsp.settings import LINT_DELAY, ClientSettings  # noqa: E402

CONFIG = '[tool.torchlint]\npreview = true\nselect = ["TL301"]\n'
ONE = "import torch\n\nx = torch.ones(3).cuda()\n"
TWO = ONE + "y = torch.zeros(3).cuda()\n"


class Editor:
    """A server with a workspace of its own; what it publishes and logs is recorded."""

    def __init__(self, root: Path, settings: dict[str, Any] | None = None) -> None:
        (root / "pyproject.toml").write_text(CONFIG)
        self.server: TorchlintServer = create_server()
        self.server.protocol._workspace = Workspace(root.as_uri())
        self.server.apply_settings({"settings": settings or {}})
        self.published: list[tuple[int | None, int]] = []  # (version, findings)
        self.logged: list[str] = []
        self.server.text_document_publish_diagnostics = (  # type: ignore[method-assign]
            lambda p: self.published.append((p.version, len(p.diagnostics))))
        self.server.window_log_message = (  # type: ignore[method-assign]
            lambda p: self.logged.append(p.message))
        self.server.window_show_message = (  # type: ignore[method-assign]
            lambda p: self.logged.append(p.message))
        self.path = root / "train.py"
        self.path.write_text(ONE)
        self.uri = self.path.as_uri()
        self.version = 1
        self.server.workspace.put_text_document(types.TextDocumentItem(
            uri=self.uri, language_id="python", version=1, text=ONE))

    def edit(self, text: str) -> None:
        self.version += 1
        self.server.workspace.update_text_document(
            types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
            types.TextDocumentContentChangeWholeDocument(text=text))

    @property
    def runs(self) -> list[str]:
        return [m for m in self.logged if " s of CPU" in m]


async def settle(editor: Editor) -> None:
    """Until every scheduled lint has finished (and its log line has arrived)."""
    for _ in range(2000):
        pending = [task for _, task in editor.server.pending.values() if not task.done()]
        if pending:
            await asyncio.wait(pending)
        await asyncio.sleep(0.01)
        if not any(not task.done() for _, task in editor.server.pending.values()) and \
                len(editor.runs) == editor.server.runs:
            return
    raise AssertionError("the lints did not finish")


def test_a_burst_of_edits_costs_one_lint_of_the_newest_version(tmp_path: Path) -> None:
    async def scenario() -> Editor:
        editor = Editor(tmp_path, {"lintDelay": 2})
        for text in (ONE + "a = 1\n", ONE + "a = 12\n", ONE + "a = 123\n", TWO):
            editor.edit(text)
            editor.server.schedule(editor.uri, editor.server.lint_delay(editor.uri), True)
            await asyncio.sleep(0.05)  # keystrokes, well within the delay
        await settle(editor)
        return editor

    editor = asyncio.run(scenario())
    assert editor.server.runs == 1
    assert editor.published == [(5, 2)]
    (run,) = editor.runs
    assert run.startswith("torchlint: linted ") and "(version 5)" in run


def test_the_lint_delay_is_an_editor_setting() -> None:
    default, problems = ClientSettings.from_options({"settings": {}})
    assert default.for_path("/x.py").lint_delay == LINT_DELAY == 0.3
    slow, problems = ClientSettings.from_options({"settings": {"lintDelay": 1.5}})
    assert not problems and slow.for_path("/x.py").lint_delay == 1.5
    for wrong in (-1, "fast", True, 60):
        kept, problems = ClientSettings.from_options({"settings": {"lintDelay": wrong}})
        assert kept.for_path("/x.py").lint_delay == LINT_DELAY
        assert problems == ["'lintDelay' must be a number of seconds from 0 to 10"]


def test_a_superseded_lint_stops_at_its_checkpoint_and_is_never_published(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started, release = threading.Event(), threading.Event()
    real = server_module.lint_snapshot

    def slow_first(snapshot: Snapshot, settings: Any, checkpoint: Any) -> Any:
        if snapshot.documents[0].version == 2:  # as if the screen took long
            started.set()
            release.wait(30)
            checkpoint()  # what lint_one does before libcst
            raise AssertionError("a superseded lint went past its checkpoint")
        return real(snapshot, settings, checkpoint)

    monkeypatch.setattr(server_module, "lint_snapshot", slow_first)

    async def scenario() -> Editor:
        editor = Editor(tmp_path, {"lintDelay": 0})
        editor.edit(ONE + "a = 1\n")
        editor.server.schedule(editor.uri, 0, True)
        while not started.is_set():
            await asyncio.sleep(0.01)
        editor.edit(TWO)  # a newer version while version 2 is being linted
        editor.server.schedule(editor.uri, 0, True)
        await asyncio.sleep(0)  # the older lint's task learns that it is cancelled
        release.set()
        await settle(editor)
        return editor

    editor = asyncio.run(scenario())
    assert editor.published == [(3, 2)]
    stopped, linted = editor.runs
    assert stopped.startswith("torchlint: stopped linting ") and "(version 2)" in stopped
    assert linted.startswith("torchlint: linted ") and "(version 3)" in linted


def test_a_text_linted_before_is_not_linted_again(tmp_path: Path) -> None:
    async def scenario() -> Editor:
        editor = Editor(tmp_path, {"lintDelay": 0})
        steps = [ONE, TWO, ONE, ONE]  # open; an edit; undo it; a change back to the same text
        for number, text in enumerate(steps):
            if number:
                editor.edit(text)
            editor.server.schedule(editor.uri, 0, reuse=True)
            await settle(editor)
        return editor

    editor = asyncio.run(scenario())
    assert editor.server.runs == 2  # ONE and TWO, each once
    # the undo shows ONE's findings again, for its own version; the last change shows the
    # same text as on screen: nothing to publish
    assert editor.published == [(1, 1), (2, 2), (3, 1)]
    result = editor.server.results[editor.uri]
    assert result.linted.snapshot.documents[0].version == 4  # code actions use version 4


def test_saving_lints_again(tmp_path: Path) -> None:
    async def scenario() -> Editor:
        editor = Editor(tmp_path, {"lintDelay": 0})
        editor.server.schedule(editor.uri, 0, reuse=True)
        await settle(editor)
        editor.edit(ONE)
        _saved(editor.server, editor.uri)
        await settle(editor)
        return editor

    editor = asyncio.run(scenario())
    assert editor.server.runs == 2
    assert editor.published == [(1, 1), (2, 1)]


def test_findings_learned_from_a_project_file_are_valid_while_it_is_unchanged(
        tmp_path: Path) -> None:
    (tmp_path / "layers.py").write_text("import torch\n\n\nclass Base(torch.nn.Module):\n"
                                        "    pass\n")
    path = tmp_path / "model.py"
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\n")
    text = ("import torch\nfrom layers import Base\n\n\nclass Net(Base):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.layers = [torch.nn.Linear(2, 2)]\n")
    path.write_text(text)
    from torchlint.config.loading import resolve_settings

    settings = resolve_settings(path).for_file(str(path))
    snapshot = Snapshot(path.as_uri(), str(path), (Document(path.as_uri(), 1, text),))
    linted = lint_snapshot(snapshot, settings)
    assert [f.diagnostic.code for f in linted.findings[path.as_uri()]] == ["TL101"]
    assert [stamp[0] for stamp in linted.learned] == [str(tmp_path / "layers.py")]
    assert linted.still_valid()
    (tmp_path / "layers.py").write_text("class Base:\n    pass\n")
    assert not linted.still_valid()
    assert not Linted(snapshot, learned=([str(tmp_path), "", -1, -1],)).still_valid()


def test_a_checkpoint_that_raises_stops_the_lint_before_libcst(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torchlint.engine.lint as engine

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("libcst was asked to parse a superseded text")

    monkeypatch.setattr(engine, "lint_source", never)
    path = str(tmp_path / "train.py")
    snapshot = Snapshot("file:///train.py", path, (Document("file:///train.py", 2, TWO),))
    from torchlint.config.loading import resolve_settings

    (tmp_path / "pyproject.toml").write_text(CONFIG)
    settings = resolve_settings(Path(path)).for_file(path)
    calls = []

    def checkpoint() -> None:
        calls.append(1)
        if len(calls) == 2:  # the one between the screen and libcst
            raise Superseded

    with pytest.raises(Superseded):
        lint_snapshot(snapshot, settings, checkpoint)
    assert len(calls) == 2


def test_the_digest_of_a_snapshot_is_its_texts_not_its_versions() -> None:
    def snapshot(version: int, text: str, uri: str = "file:///a.py") -> Snapshot:
        return Snapshot(uri, "/a.py", (Document(uri, version, text),))

    assert snapshot(1, ONE).digest == snapshot(7, ONE).digest
    assert snapshot(1, ONE).digest != snapshot(1, TWO).digest
    assert snapshot(1, ONE).digest != snapshot(1, ONE, "file:///b.py").digest
    # the texts' boundaries count: two cells are not one cell of the joined text
    cells = Snapshot("nb", "/nb.ipynb", (Document("c1", 1, "ab", 1), Document("c2", 1, "c", 2)),
                     notebook=True)
    moved = Snapshot("nb", "/nb.ipynb", (Document("c1", 1, "a", 1), Document("c2", 1, "bc", 2)),
                     notebook=True)
    assert cells.digest != moved.digest


def test_the_project_knowledge_is_kept_between_lints_until_a_save(tmp_path: Path) -> None:
    async def scenario() -> tuple[Editor, list[Any]]:
        editor = Editor(tmp_path, {"lintDelay": 0})
        projects = []
        for text in (ONE, TWO):
            editor.edit(text)
            editor.server.schedule(editor.uri, 0, reuse=True)
            await settle(editor)
            projects.append(editor.server.results[editor.uri].settings.project)
        editor.server.projects.clear()  # what a save does: files on disk changed
        editor.edit(ONE + "a = 1\n")
        editor.server.schedule(editor.uri, 0)
        await settle(editor)
        projects.append(editor.server.results[editor.uri].settings.project)
        return editor, projects

    editor, (first, second, after_save) = asyncio.run(scenario())
    assert first is not None and first is second
    assert after_save is not first
    assert list(editor.server.projects.values()) == [after_save]


COUNTED = ("TL109", "TL206", "TL208", "TL304", "TL311", "TL601", "TL602", "TL603")


@pytest.mark.parametrize("code", COUNTED)
def test_the_editor_skips_the_preview_rules_only_counted_and_finds_the_same(
        tmp_path: Path, code: str) -> None:
    from torchlint.config.loading import resolve_settings
    from torchlint.run.file import lint_one
    from torchlint.run.outcome import Mode
    from torchlint.source import SourceFile

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / f"{code}.py"
    text = fixture.read_text(encoding="utf-8")
    path = tmp_path / f"{code.lower()}.py"
    path.write_text(text, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\n")
    settings = resolve_settings(path).for_file(str(path))
    assert code in settings.preview_codes  # preview off: counted, never reported
    snapshot = Snapshot(path.as_uri(), str(path), (Document(path.as_uri(), 1, text),))
    assert shown_only(settings, snapshot).preview_codes == frozenset()
    checked = lint_one(SourceFile(path=str(path), text=text), settings, Mode())
    # the fixture does hold findings of the rule the editor skips
    previewed = replace(settings, codes=settings.codes | {code},
                        preview_codes=settings.preview_codes - {code})
    assert code in {d.code for d in lint_one(SourceFile(path=str(path), text=text), previewed,
                                             Mode()).diagnostics}
    linted = lint_snapshot(snapshot, settings)
    assert [f.diagnostic for f in linted.findings[path.as_uri()]] == checked.diagnostics


def test_the_counted_preview_rules_still_run_where_a_noqa_may_be_for_them(
        tmp_path: Path) -> None:
    from torchlint.config.loading import resolve_settings
    from torchlint.run.file import lint_one
    from torchlint.run.outcome import Mode
    from torchlint.source import SourceFile

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "TL304.py"
    lines = fixture.read_text(encoding="utf-8").splitlines(keepends=True)
    flagged = next(n for n, line in enumerate(lines) if "# error: TL304" in line)
    lines[flagged] = lines[flagged].replace("# error: TL304", "# noqa: TL3")
    text = "".join(lines)
    path = tmp_path / "data.py"
    path.write_text(text, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nextend-select = ["TL002"]\n')
    settings = resolve_settings(path).for_file(str(path))
    snapshot = Snapshot(path.as_uri(), str(path), (Document(path.as_uri(), 1, text),))
    assert shown_only(settings, snapshot) is settings
    without_noqa = Snapshot(snapshot.uri, snapshot.path, (Document(
        snapshot.uri, 1, text.replace("# noqa: TL3", "")),))
    assert shown_only(settings, without_noqa).preview_codes == frozenset()
    checked = lint_one(SourceFile(path=str(path), text=text), settings, Mode())
    linted = lint_snapshot(snapshot, settings)
    assert [f.diagnostic for f in linted.findings[path.as_uri()]] == checked.diagnostics
    assert ("TL002", flagged + 1) in [(d.code, d.line) for d in checked.diagnostics]


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc")
def test_a_document_the_screen_finds_clean_is_never_parsed_by_libcst(tmp_path: Path) -> None:
    from lsp_client import Client, open_document

    def parsed(client: Client) -> bool:  # libcst's native parser is loaded on first use
        maps = Path(f"/proc/{client.proc.pid}/maps").read_text()
        return "libcst" in maps

    (tmp_path / "pyproject.toml").write_text(CONFIG)
    client = Client(tmp_path)
    try:
        client.initialize(tmp_path)
        clean = "import os\n\n\ndef f(path):\n    return os.listdir(path)\n"
        uri = open_document(client, tmp_path / "util.py", clean)
        assert client.diagnostics(uri) == []
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"text": clean + "x = 1\n"}]})
        assert client.diagnostics(uri) == []
        assert not parsed(client)
        uri = open_document(client, tmp_path / "train.py", ONE)
        assert len(client.diagnostics(uri)) == 1
        assert parsed(client)
    finally:
        client.close()
