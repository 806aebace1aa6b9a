"""How the language server keeps up with typing in a large file.

    python benchmarks/lsp_latency.py [--lines 7000 | --file PATH] [--edits 20]
                                     [--interval 0.05] [--edit comment|code]
                                     [--server "python -m torchlint server"]

Opens a generated file of about ``--lines`` lines of training code (or ``--file``), then
sends ``--edits`` changes ``--interval`` seconds apart, as fast typing does: a ``#`` typed
at the end of the file (``--edit comment``), or a statement typed character by character
in the middle of the file (``--edit code``). It prints: the time to the first diagnostics
after opening, how many diagnostics messages the burst caused and for which versions, how
long after the last keystroke (as typed, on schedule) the diagnostics of the last version
arrived, the server's CPU time for the burst, how many lints the server ran for it (each
lint is logged with its CPU time; a server that does not log them shows none) and the CPU
per re-lint: the burst's CPU divided by those lints. Wall times follow the machine's load;
the CPU times and the counts do not. Compare two versions with ``--server`` (with
``env PYTHONPATH=CHECKOUT`` in front, to run another checkout's server).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BLOCK = '''
class Block{n}(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.layers = [nn.Linear(width, width) for _ in range(3)]
        self.norm = nn.BatchNorm1d(width)

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return self.norm(x).view(x.size(0), -1)


def train_{n}(model, loader, optimizer, device):
    losses = []
    for inputs, targets in loader:
        inputs = inputs.to(device)
        mask = torch.ones(inputs.shape[0]).cuda()
        loss = F.cross_entropy(model(inputs), targets.to(device)) * mask.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def evaluate_{n}(model, loader):
    model.eval()
    with torch.no_grad():
        return [model(x) for x, _ in loader]
'''


def source(lines: int) -> str:
    parts = ["import torch\nfrom torch import nn\nimport torch.nn.functional as F\n"]
    n = 0
    while sum(p.count("\n") for p in parts) < lines:
        parts.append(BLOCK.format(n=n))
        n += 1
    return "".join(parts)


class Server:
    def __init__(self, command: list[str], cwd: Path) -> None:
        # this checkout's torchlint, whichever is installed (``env PYTHONPATH=...`` in
        # the command chooses another)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            filter(None, [CHECKOUT, os.environ.get("PYTHONPATH")])))
        self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.messages: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.ident = 0

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = 0
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            self.messages.put((time.perf_counter(), json.loads(stream.read(length))))

    def send(self, payload: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **payload}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def request(self, method: str, params: Any) -> Any:
        self.ident += 1
        self.send({"id": self.ident, "method": method, "params": params})
        while True:
            _, message = self.messages.get(timeout=120)
            if message.get("id") == self.ident and "method" not in message:
                return message.get("result")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


CHECKOUT = str(Path(__file__).resolve().parents[1])
# what the server logs for each lint it runs (torchlint/lsp/server.py)
LINT_LOG = re.compile(r"^torchlint: (linted|stopped linting|failed linting) .* "
                      r"\(version (\S+)\) in ([0-9.]+) s of CPU$")


def keystrokes(text: str, edits: int, kind: str) -> list[str]:
    """The texts after each of ``edits`` keystrokes."""
    if kind == "comment":  # a comment typed at the end of the file
        return [text + "#" * n for n in range(1, edits + 1)]
    # a statement typed in the middle of the file, at the start of a top-level line
    lines = text.splitlines(keepends=True)
    middle = len(lines) // 2
    at = next((i for i in range(middle, len(lines)) if lines[i][:1].isalpha()), middle)
    head, tail = "".join(lines[:at]), "".join(lines[at:])
    # ``x = 111…`` and its newline: the last version parses (from 6 keystrokes on)
    typed = ("x = " + "1" * max(1, edits - 5) + "\n")[:edits]
    return [head + typed[:n] + tail for n in range(1, edits + 1)]


def run(command: list[str], lines: int, edits: int, interval: float,
        file: Path | None = None, kind: str = "comment") -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        text = file.read_text(encoding="utf-8") if file is not None else source(lines)
        path = root / "big.py"
        path.write_text(text)
        server = Server(command, root)
        server.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(),
                                      "capabilities": {"textDocument": {
                                          "publishDiagnostics": {}}}})
        server.send({"method": "initialized", "params": {}})
        uri = path.as_uri()
        opened = time.perf_counter()
        server.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}}})
        while True:
            at, message = server.messages.get(timeout=120)
            if message.get("method") == "textDocument/publishDiagnostics":
                first = at - opened
                count = len(message["params"]["diagnostics"])
                break
        cpu_before = server.cpu_seconds()
        started = time.perf_counter()
        texts = keystrokes(text, edits, kind)
        for number, version in enumerate(range(2, edits + 2)):
            # keystrokes on a schedule: a server that blocks its input makes the sending
            # wait, but the typist does not
            time.sleep(max(0.0, started + number * interval - time.perf_counter()))
            text = texts[number]
            server.send({"method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": text}]}})
        last_keystroke = started + (edits - 1) * interval
        final = edits + 1
        published: list[int | None] = []
        lints: list[tuple[str, str, float]] = []  # (outcome, version, CPU seconds)
        while True:
            at, message = server.messages.get(timeout=300)
            logged = LINT_LOG.match(message["params"].get("message", "")) \
                if message.get("method") == "window/logMessage" else None
            if logged is not None:
                lints.append((logged[1], logged[2], float(logged[3])))
            if message.get("method") != "textDocument/publishDiagnostics":
                continue
            version = message["params"].get("version")
            published.append(version)
            if version == final:
                settled = at - last_keystroke
                break
        cpu = server.cpu_seconds() - cpu_before
        server.request("shutdown", None)
        server.send({"method": "exit", "params": {}})
        server.proc.wait(timeout=30)
        return {"lines": text.count("\n"), "findings": count, "first_diagnostics_s": first,
                "edits": edits, "interval_s": interval, "messages_for_burst": len(published),
                "versions_published": published, "last_keystroke_to_its_diagnostics_s": settled,
                "server_cpu_during_burst_s": cpu,
                "lints_for_burst": len(lints) if lints else None,
                "lints_stopped": sum(1 for outcome, _, _ in lints if outcome != "linted"),
                "lint_cpu_s": [round(seconds, 3) for _, _, seconds in lints],
                "server_cpu_per_relint_s": cpu / len(lints) if lints else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=7000)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--server", default=f"{sys.executable} -m torchlint server")
    parser.add_argument("--file", type=Path, help="a real file instead of generated code")
    parser.add_argument("--edit", choices=("comment", "code"), default="comment",
                        help="what is typed: a comment at the end, or code in the middle")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(shlex.split(args.server), args.lines, args.edits, args.interval, args.file,
                 args.edit)
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:28} {round(value, 3) if isinstance(value, float) else value}")


if __name__ == "__main__":
    main()
