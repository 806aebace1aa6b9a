"""A JSON-RPC client that drives ``torchlint server`` over stdio, as an editor does."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

TIMEOUT = 30
# the server of this checkout, whichever torchlint is installed
CHECKOUT = str(Path(__file__).resolve().parents[1])


class Client:
    def __init__(self, cwd: Path, command: list[str] | None = None,
                 checkout: bool = True) -> None:
        """``checkout``: run this checkout's torchlint (else the one ``command`` finds)."""
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if checkout:
            env["PYTHONPATH"] = os.pathsep.join(
                filter(None, [CHECKOUT, os.environ.get("PYTHONPATH")]))
        else:
            env.pop("PYTHONPATH", None)
        self.proc = subprocess.Popen(
            command or [sys.executable, "-m", "torchlint", "server"], cwd=cwd, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        self.backlog: list[dict[str, Any]] = []
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
        message = self.answer(method, params)
        assert "error" not in message, message
        return message["result"]

    def answer(self, method: str, params: Any) -> dict[str, Any]:
        """The whole response to a request (a result or an error)."""
        self.next_id += 1
        ident = self.next_id
        self.send({"id": ident, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == ident and "method" not in m, keep=True)

    def wait(self, predicate: Any, keep: bool = False) -> dict[str, Any]:
        """The next message ``predicate`` accepts; the ones before it are dropped, or with
        ``keep`` (waiting for an answer) kept for the next wait."""
        for index, message in enumerate(self.backlog):
            if predicate(message):
                del self.backlog[:index + 1]
                return message
        if not keep:
            self.backlog.clear()
        while True:
            try:
                message = self.messages.get(timeout=TIMEOUT)
            except queue.Empty:
                raise AssertionError("the server did not answer in time") from None
            if predicate(message):
                return message
            if keep:
                self.backlog.append(message)

    def diagnostics(self, uri: str) -> list[dict[str, Any]]:
        message = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri)
        return message["params"]["diagnostics"]

    def initialize(self, root: Path, capabilities: dict[str, Any] | None = None,
                   options: Any = None) -> dict[str, Any]:
        result = self.request("initialize", {
            "processId": os.getpid(), "rootUri": root.as_uri(),
            "capabilities": capabilities or {"textDocument": {"publishDiagnostics": {}}},
            "initializationOptions": options})
        self.notify("initialized", {})
        return result

    def close(self) -> None:
        try:
            self.answer("shutdown", None)  # an error if the test shut the server down
            self.notify("exit", {})
            self.proc.wait(timeout=TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def open_document(client: Client, path: Path, text: str, version: int = 1) -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": version, "text": text}})
    return uri


def actions(client: Client, uri: str, found: dict[str, Any] | None = None,
             only: list[str] | None = None) -> list[dict[str, Any]]:
    where = found["range"] if found else {"start": {"line": 0, "character": 0},
                                          "end": {"line": 0, "character": 0}}
    context: dict[str, Any] = {"diagnostics": [found] if found else []}
    if only:
        context["only"] = only
    return client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": where, "context": context})


def apply_edits(text: str, edits: list[dict[str, Any]]) -> str:
    """Apply LSP text edits (ASCII text: character = UTF-16 unit)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: dict[str, int]) -> int:
        return starts[position["line"]] + position["character"]

    for edit in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        text = (text[:offset(edit["range"]["start"])] + edit["newText"]
                + text[offset(edit["range"]["end"]):])
    return text
