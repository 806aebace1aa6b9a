"""How the language server keeps up with typing in a large file.

    python benchmarks/lsp_latency.py [--lines 7000 | --file PATH] [--edits 20]
                                     [--interval 0.05] [--server "python -m torchlint server"]

Opens a generated file of about ``--lines`` lines of training code, then sends
``--edits`` changes ``--interval`` seconds apart, as fast typing does, and prints: the time
to the first diagnostics after opening, how many diagnostics messages the burst caused and
for which versions, how long after the last keystroke (as typed, on schedule) the
diagnostics of the last version arrived, and the server's CPU time for the burst. Wall
times follow the machine's load; the CPU time and the counts do not. Compare two versions with ``--server``.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
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
        self.proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE,
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


def run(command: list[str], lines: int, edits: int, interval: float,
        file: Path | None = None) -> dict[str, Any]:
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
        for number, version in enumerate(range(2, edits + 2)):
            # keystrokes on a schedule: a server that blocks its input makes the sending
            # wait, but the typist does not
            time.sleep(max(0.0, started + number * interval - time.perf_counter()))
            text += "#"  # one keystroke at the end of the file
            server.send({"method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": text}]}})
        last_keystroke = started + (edits - 1) * interval
        final = edits + 1
        published: list[int | None] = []
        while True:
            at, message = server.messages.get(timeout=300)
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
                "server_cpu_during_burst_s": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=7000)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--server", default=f"{sys.executable} -m torchlint server")
    parser.add_argument("--file", type=Path, help="a real file instead of generated code")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(shlex.split(args.server), args.lines, args.edits, args.interval, args.file)
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:28} {round(value, 3) if isinstance(value, float) else value}")


if __name__ == "__main__":
    main()
