"""The language server, driven by a real JSON-RPC client over stdio."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")
pytest.importorskip("lsprotocol")

TIMEOUT = 30
SOURCE = "import torch\n\n\ndef f(device):\n    x = torch.ones(3).cuda()\n    return x\n"


class Client:
    def __init__(self, cwd: Path) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "torchlint", "server"], cwd=cwd, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value.strip())
            assert length is not None
            self.messages.put(json.loads(stream.read(length)))

    def send(self, payload: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **payload}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: dict[str, Any] | None) -> Any:
        self.next_id += 1
        ident = self.next_id
        self.send({"id": ident, "method": method, "params": params})
        message = self.wait(lambda m: m.get("id") == ident and "method" not in m)
        assert "error" not in message, message
        return message["result"]

    def wait(self, predicate: Any) -> dict[str, Any]:
        while True:
            try:
                message = self.messages.get(timeout=TIMEOUT)
            except queue.Empty:
                raise AssertionError("the server did not answer in time") from None
            if predicate(message):
                return message

    def diagnostics(self, uri: str) -> list[dict[str, Any]]:
        message = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri)
        return message["params"]["diagnostics"]

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", {})
            self.proc.wait(timeout=TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("workspace")
    client = Client(root)
    result = client.request("initialize", {
        "processId": os.getpid(), "rootUri": root.as_uri(),
        "capabilities": {"textDocument": {"publishDiagnostics": {}}}})
    assert result["serverInfo"]["name"] == "torchlint"
    client.notify("initialized", {})
    yield client
    client.close()


@pytest.fixture(autouse=True)
def pinned_rules(tmp_path: Path) -> None:
    # rules added later must not change these exact expectations
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nselect = ["TL301"]\n')


def _open(client: Client, path: Path, text: str) -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": text}})
    return uri


def test_diagnostics_on_open_change_and_save(session: Client, tmp_path: Path) -> None:
    uri = _open(session, tmp_path / "train.py", SOURCE)
    found = session.diagnostics(uri)
    assert [(d["code"], d["source"]) for d in found] == [("TL301", "torchlint")]
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


def test_utf16_columns(session: Client, tmp_path: Path) -> None:
    text = 'import torch\ns = "𝔘"; x = torch.ones(3).cuda()\n'
    uri = _open(session, tmp_path / "wide.py", text)
    (found,) = session.diagnostics(uri)
    # the character before takes two UTF-16 code units
    assert found["range"]["start"] == {"line": 1, "character": 14}


def test_quick_fix_and_fix_all(session: Client, tmp_path: Path) -> None:
    text = SOURCE + "y = torch.zeros(2).cuda()\n"
    uri = _open(session, tmp_path / "train.py", text)
    found = session.diagnostics(uri)
    actions = session.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": found[0]["range"],
        "context": {"diagnostics": [found[0]]}})
    quick = [a for a in actions if a["kind"] == "quickfix"]
    assert len(quick) == 1 and quick[0]["isPreferred"] is True
    assert "TL301" in quick[0]["title"]
    (edit,) = quick[0]["edit"]["changes"][uri]
    assert edit["newText"] == 'torch.ones(3, device="cuda")'
    assert edit["range"] == found[0]["range"]

    everything = session.request("textDocument/codeAction", {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": [], "only": ["source.fixAll"]}})
    assert [a["kind"] for a in everything] == ["source.fixAll.torchlint"]
    (whole,) = everything[0]["edit"]["changes"][uri]
    assert 'torch.ones(3, device="cuda")' in whole["newText"]
    assert 'torch.zeros(2, device="cuda")' in whole["newText"]


def test_honours_project_config(session: Client, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nignore = ["TL301"]\n')
    uri = _open(session, tmp_path / "quiet.py", SOURCE)
    assert session.diagnostics(uri) == []
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nselect = ["TL301", "TL0"]\n')
    session.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert [d["code"] for d in session.diagnostics(uri)] == ["TL301"]


def test_notebook_cell_magics_are_set_aside(session: Client, tmp_path: Path) -> None:
    # an editor sends each notebook cell as its own document, IPython syntax included
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
    actions = session.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": found["range"],
        "context": {"diagnostics": [found]}})
    (quick,) = [a for a in actions if a["kind"] == "quickfix"]
    (edit,) = quick["edit"]["changes"][uri]
    assert edit["range"] == found["range"]
    (fix_all,) = [a for a in actions if a["kind"] == "source.fixAll.torchlint"]
    (whole,) = fix_all["edit"]["changes"][uri]
    assert whole["newText"] == text.replace("torch.ones(3).cuda()", 'torch.ones(3, device="cuda")')
    assert whole["range"]["end"] == {"line": 4, "character": 11}


def test_a_config_error_pops_up_once(session: Client, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nbogus = 1\n')
    uri = _open(session, tmp_path / "edited.py", SOURCE)
    for version in (2, 3):
        session.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": SOURCE + "#\n" * version}]})
    seen: list[dict[str, Any]] = []
    published = 0
    while published < 3:
        message = session.messages.get(timeout=TIMEOUT)
        seen.append(message)
        if message.get("method") == "textDocument/publishDiagnostics" \
                and message["params"]["uri"] == uri:
            published += 1
    popups = [m for m in seen if m.get("method") == "window/showMessage"]
    logged = [m for m in seen if m.get("method") == "window/logMessage"]
    assert len(popups) == 1 and "bogus" in popups[0]["params"]["message"]
    assert len(logged) == 2
