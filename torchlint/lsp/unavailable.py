"""A language server that cannot lint and says why: it answers ``initialize`` (with no
capabilities), shows the reason as an error pop-up once the client is initialized,
answers every other request with that reason as an error, and stops on ``exit``.

It needs nothing but the standard library, so it runs when pygls is not installed."""

from __future__ import annotations

import json
import sys
from typing import Any, BinaryIO

from torchlint import __version__

_NOT_AVAILABLE = -32603  # InternalError: the server cannot do what was asked


def _read(stream: BinaryIO) -> dict[str, Any] | None:
    """The next message, or None at the end of the input."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            if length is not None:
                break
            continue
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            length = int(value.strip())
    try:
        message = json.loads(stream.read(length))
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


def _write(stream: BinaryIO, message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


def serve_unavailable(reason: str, stdin: BinaryIO | None = None,
                      stdout: BinaryIO | None = None) -> None:
    source = stdin or sys.stdin.buffer
    sink = stdout or sys.stdout.buffer
    print(reason, file=sys.stderr)
    while (message := _read(source)) is not None:
        method, ident = message.get("method"), message.get("id")
        if method == "exit":
            return
        if method == "initialized":
            _write(sink, {"method": "window/showMessage",
                          "params": {"type": 1, "message": reason}})
        if ident is None or method is None:
            continue  # a notification, or a response to us
        if method == "initialize":
            _write(sink, {"id": ident, "result": {
                "capabilities": {}, "serverInfo": {"name": "torchlint", "version": __version__}}})
        elif method == "shutdown":
            _write(sink, {"id": ident, "result": None})
        else:
            _write(sink, {"id": ident, "error": {"code": _NOT_AVAILABLE, "message": reason}})
