"""The language server, driven by a real JSON-RPC client over stdio."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")
pytest.importorskip("lsprotocol")

from lsp_client import TIMEOUT, Client, apply_edits, open_document  # noqa: E402
from lsp_client import actions as code_actions  # noqa: E402

SOURCE = "import torch\n\n\ndef f(device):\n    x = torch.ones(3).cuda()\n    return x\n"


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("workspace")
    client = Client(root)
    result = client.initialize(root)
    assert result["serverInfo"]["name"] == "torchlint"
    yield client
    client.close()


@pytest.fixture
def fresh(tmp_path: Path) -> Any:
    """A server of its own, for tests that change its settings."""
    clients: list[Client] = []

    def start(capabilities: dict[str, Any] | None = None, options: Any = None
              ) -> tuple[Client, dict[str, Any]]:
        client = Client(tmp_path)
        clients.append(client)
        return client, client.initialize(tmp_path, capabilities, options)

    yield start
    for client in clients:
        client.close()


@pytest.fixture(autouse=True)
def pinned_rules(tmp_path: Path) -> None:
    # rules added later must not change these exact expectations
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\npreview = true\nselect = ["TL301"]\n')


def test_diagnostics_on_open_change_and_save(session: Client, tmp_path: Path) -> None:
    uri = open_document(session, tmp_path / "train.py", SOURCE)
    found = session.diagnostics(uri)
    assert [(d["code"], d["source"], d["severity"]) for d in found] == [("TL301", "torchlint", 2)]
    assert found[0]["range"] == {"start": {"line": 4, "character": 8},
                                 "end": {"line": 4, "character": 28}}

    session.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": {"line": 4, "character": 8},
                                      "end": {"line": 4, "character": 28}},
                            "text": 'torch.ones(3, device="cuda")'}]})
    assert session.diagnostics(uri) == []

    session.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 3},
        "contentChanges": [{"text": SOURCE + "y = torch.zeros(2).cuda()\n"}]})
    assert [d["range"]["start"]["line"] for d in session.diagnostics(uri)] == [4, 6]

    session.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert len(session.diagnostics(uri)) == 2


def test_a_syntax_error_is_an_error(session: Client, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\npreview = true\nselect = ["TL001", "TL301"]\n')
    uri = open_document(session, tmp_path / "bad.py", "def f(:\n")
    (found,) = session.diagnostics(uri)
    assert (found["code"], found["severity"]) == ("TL001", 1)


def test_utf16_columns(session: Client, tmp_path: Path) -> None:
    text = 'import torch\ns = "𝔘"; x = torch.ones(3).cuda()\n'
    uri = open_document(session, tmp_path / "wide.py", text)
    (found,) = session.diagnostics(uri)
    # the character before takes two UTF-16 code units
    assert found["range"]["start"] == {"line": 1, "character": 14}


def test_quick_fix_says_what_it_does(session: Client, tmp_path: Path) -> None:
    text = SOURCE + "y = torch.zeros(2).cuda()\n"
    uri = open_document(session, tmp_path / "train.py", text)
    found = session.diagnostics(uri)
    actions = code_actions(session, uri, found[0])
    titles = [a["title"] for a in actions]
    assert titles == ["Pass device= to the factory (TL301)", "Disable TL301 for this line",
                      "Show documentation for TL301"]
    fix, disable, docs = actions
    assert fix["kind"] == "quickfix" and fix["isPreferred"] is True
    (edit,) = fix["edit"]["changes"][uri]
    assert edit["newText"] == 'torch.ones(3, device="cuda")'
    assert edit["range"] == found[0]["range"]
    assert apply_edits(text, disable["edit"]["changes"][uri]).splitlines()[4] == \
        "    x = torch.ones(3).cuda()  # noqa: TL301"
    assert docs["command"] == {"title": "Show documentation for TL301",
                               "command": "torchlint.showDocumentation", "arguments": ["TL301"]}


def test_disable_extends_a_noqa_and_avoids_strings(session: Client, tmp_path: Path) -> None:
    text = ("import torch\n"
            "x = torch.ones(3).cuda()  # noqa: TL302\n"
            'y = torch.ones(3).cuda(); s = """\n'
            'text"""\n')
    uri = open_document(session, tmp_path / "noqa.py", text)
    first, second = session.diagnostics(uri)
    (disable,) = [a for a in code_actions(session, uri, first) if a["title"].startswith("Disable")]
    assert apply_edits(text, disable["edit"]["changes"][uri]).splitlines()[1] == \
        "x = torch.ones(3).cuda()  # noqa: TL302, TL301"
    # a comment at the end of line 3 would land inside the string
    assert not [a for a in code_actions(session, uri, second) if a["title"].startswith("Disable")]


def test_fix_all_is_minimal_edits(session: Client, tmp_path: Path) -> None:
    text = SOURCE + "y = torch.zeros(2).cuda()\n"
    uri = open_document(session, tmp_path / "train.py", text)
    session.diagnostics(uri)
    (fix_all,) = code_actions(session, uri, only=["source.fixAll"])
    assert (fix_all["kind"], fix_all["title"]) == (
        "source.fixAll.torchlint", "torchlint: Fix all auto-fixable problems")
    edits = fix_all["edit"]["changes"][uri]
    assert [e["newText"] for e in edits] == [', device="cuda"', ', device="cuda"']
    assert apply_edits(text, edits) == text.replace("torch.ones(3).cuda()", 'torch.ones(3, device="cuda")'
                                               ).replace("torch.zeros(2).cuda()",
                                                         'torch.zeros(2, device="cuda")')


def test_hover_shows_the_rule(session: Client, tmp_path: Path) -> None:
    uri = open_document(session, tmp_path / "train.py", SOURCE)
    (found,) = session.diagnostics(uri)
    hover = session.request("textDocument/hover", {
        "textDocument": {"uri": uri}, "position": {"line": 4, "character": 12}})
    assert hover["contents"]["kind"] == "markdown"
    assert hover["contents"]["value"].startswith("**TL301** `create-then-move`")
    assert "## Why is this bad?" in hover["contents"]["value"]
    assert hover["range"] == found["range"]
    assert session.request("textDocument/hover", {
        "textDocument": {"uri": uri}, "position": {"line": 0, "character": 2}}) is None


def test_honours_project_config(session: Client, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\npreview = true\nignore = ["TL301"]\n')
    uri = open_document(session, tmp_path / "quiet.py", SOURCE)
    assert session.diagnostics(uri) == []
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\npreview = true\nselect = ["TL301", "TL0"]\n')
    session.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert [d["code"] for d in session.diagnostics(uri)] == ["TL301"]


def test_notebook_cell_alone_sets_ipython_aside(session: Client, tmp_path: Path) -> None:
    # a client without notebook sync sends each cell as its own document
    (tmp_path / "nb.ipynb").write_text("{}")
    uri = f"vscode-notebook-cell:{(tmp_path / 'nb.ipynb').as_posix()}#W0sZmlsZQ%3D%3D"
    text = ("%matplotlib inline\nimport torch\n!pip install --upgrade torch torchvision\n"
            "x = torch.ones(3).cuda()\n%time y = 1")
    session.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": text}})
    (found,) = session.diagnostics(uri)
    assert found["code"] == "TL301"
    assert found["range"] == {"start": {"line": 3, "character": 4},
                              "end": {"line": 3, "character": 24}}
    (quick,) = [a for a in code_actions(session, uri, found) if a.get("isPreferred")]
    (edit,) = quick["edit"]["changes"][uri]
    assert edit["range"] == found["range"]
    (fix_all,) = code_actions(session, uri, only=["source.fixAll"])
    assert apply_edits(text, fix_all["edit"]["changes"][uri]) == text.replace(
        "torch.ones(3).cuda()", 'torch.ones(3, device="cuda")')


def test_a_config_error_pops_up_once(session: Client, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nbogus = 1\n')
    uri = open_document(session, tmp_path / "edited.py", SOURCE)
    seen: list[dict[str, Any]] = []
    for version in (2, 3):
        # each version is linted: wait for its diagnostics before the next edit
        session.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": SOURCE + "#\n" * version}]})
        while True:
            message = session.messages.get(timeout=TIMEOUT)
            seen.append(message)
            if message.get("method") == "textDocument/publishDiagnostics" \
                    and message["params"]["uri"] == uri \
                    and message["params"].get("version") == version:
                break
    popups = [m for m in seen if m.get("method") == "window/showMessage"]
    logged = [m for m in seen if m.get("method") == "window/logMessage"
              and m["params"]["type"] == 1]
    assert len(popups) == 1 and "bogus" in popups[0]["params"]["message"]
    assert len(logged) == 2


@pytest.mark.parametrize(("method", "params", "says"), [
    ("textDocument/hover", {"foo": 1}, "textDocument"),
    ("textDocument/codeAction", {"textDocument": {"uri": 5}}, "range"),
    ("codeAction/resolve", {"x": 1}, "title"),
    ("textDocument/hover", None, "textDocument/hover"),
])
def test_a_request_with_invalid_params_gets_an_error(session: Client, method: str,
                                                      params: Any, says: str) -> None:
    answer = session.answer(method, params)
    assert answer["error"]["code"] == -32602  # InvalidParams
    message = answer["error"]["message"]
    assert method in message and says in message and "Traceback" not in message
    # the server goes on answering
    assert session.request("textDocument/hover", {
        "textDocument": {"uri": (Path.cwd() / "none.py").as_uri()},
        "position": {"line": 0, "character": 0}}) is None


def test_a_notification_with_invalid_params_is_reported(fresh: Any) -> None:
    client, _ = fresh()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": 3}})
    shown = client.wait(lambda m: m.get("method") == "window/showMessage")["params"]
    assert "textDocument/didOpen" in shown["message"] and "ignored" in shown["message"]
    assert "Traceback" not in shown["message"]


def test_a_server_that_cannot_load_its_rules_says_so(tmp_path: Path) -> None:
    # torchlint.rules cannot be imported, as after a broken install
    script = ("import sys; sys.modules['torchlint.rules'] = None\n"
              "from torchlint.lsp import serve; serve()\n")
    client = Client(tmp_path, [sys.executable, "-c", script])
    try:
        client.initialize(tmp_path)
        shown = client.wait(lambda m: m.get("method") == "window/showMessage")["params"]
        assert shown["type"] == 1  # Error
        assert "cannot lint" in shown["message"] and "torchlint.rules" in shown["message"]
        uri = open_document(client, tmp_path / "train.py", SOURCE)
        assert client.diagnostics(uri) == []  # answered, empty: not silent
    finally:
        client.close()


def test_a_huge_document_is_answered_with_why_it_is_not_linted(fresh: Any,
                                                                tmp_path: Path) -> None:
    client, _ = fresh()
    text = SOURCE + "y = torch.zeros(2).cuda()\n" * 180_000  # 4.7 MB, over the 500 kB default
    uri = open_document(client, tmp_path / "generated.py", text)
    seen: list[dict[str, Any]] = []
    client.wait(lambda m: seen.append(m) or (  # type: ignore[func-returns-value]
        m.get("method") == "textDocument/publishDiagnostics"))
    assert seen[-1]["params"]["diagnostics"] == []
    (shown,) = [m["params"] for m in seen if m.get("method") == "window/showMessage"]
    assert shown["type"] == 2  # Warning
    assert shown["message"] == (f"torchlint: {tmp_path / 'generated.py'}: skipped: 4.7 MB is "
                                "over max-file-size (500 kB); raise it in the configuration "
                                "to lint it")
    # requests on it are answered
    assert client.request("textDocument/hover", {
        "textDocument": {"uri": uri}, "position": {"line": 4, "character": 12}}) is None
    assert code_actions(client, uri, only=["source.fixAll"]) == []


def test_max_file_size_decides_what_is_linted(fresh: Any, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchlint]\npreview = true\nselect = ["TL301"]\nmax-file-size = 300\n')
    client, _ = fresh()
    small = open_document(client, tmp_path / "small.py", SOURCE)
    assert [d["code"] for d in client.diagnostics(small)] == ["TL301"]
    large = open_document(client, tmp_path / "large.py", SOURCE + "#\n" * 200)
    shown = client.wait(lambda m: m.get("method") == "window/showMessage")["params"]
    assert "large.py: skipped: 472 bytes is over max-file-size (300 bytes)" in \
        shown["message"]
    assert client.diagnostics(large) == []
    # an edit that keeps it too large is logged, not one more pop-up
    client.notify("textDocument/didChange", {"textDocument": {"uri": large, "version": 2},
                                             "contentChanges": [{"text": SOURCE + "#\n" * 300}]})
    seen: list[dict[str, Any]] = []
    client.wait(lambda m: seen.append(m) or (  # type: ignore[func-returns-value]
        m.get("method") == "textDocument/publishDiagnostics"))
    assert not [m for m in seen if m.get("method") == "window/showMessage"]
    assert any("672 bytes is over" in m["params"]["message"] for m in seen
               if m.get("method") == "window/logMessage")


def test_a_server_without_the_lsp_extra_says_so(tmp_path: Path) -> None:
    # pygls cannot be imported, as after pip install . without [lsp]
    script = ("import sys; sys.modules['pygls'] = None\n"
              "from torchlint.cli import entry_point; sys.argv[1:] = ['server']; "
              "entry_point()\n")
    client = Client(tmp_path, [sys.executable, "-c", script])
    try:
        assert client.initialize(tmp_path)["serverInfo"]["name"] == "torchlint"
        shown = client.wait(lambda m: m.get("method") == "window/showMessage")["params"]
        assert shown["type"] == 1 and "needs the lsp extra" in shown["message"]
        assert "pygls" in shown["message"] and "[lsp]" in shown["message"]
        answer = client.answer("textDocument/hover", {
            "textDocument": {"uri": (tmp_path / "x.py").as_uri()},
            "position": {"line": 0, "character": 0}})
        assert answer["error"]["message"] == shown["message"]
    finally:
        client.close()
    assert client.proc.returncode == 0


def test_a_request_after_shutdown_is_refused_not_dropped(fresh: Any) -> None:
    client, _ = fresh()
    assert client.request("shutdown", None) is None
    answer = client.answer("textDocument/hover", {
        "textDocument": {"uri": (Path.cwd() / "none.py").as_uri()},
        "position": {"line": 0, "character": 0}})
    assert answer["error"]["code"] == -32600  # InvalidRequest
    assert answer["error"]["message"] == "textDocument/hover: the server is shutting down"
