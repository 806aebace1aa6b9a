"""Reading a source file faithfully and writing it back the same way."""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

UTF8_BOM = b"\xef\xbb\xbf"
_NEWLINE = re.compile(r"\r\n|\r|\n")


class DecodeError(Exception):
    """The bytes cannot be turned into text; ``line`` is 1-based when known."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


@dataclass(frozen=True)
class SourceFile:
    """A Python source as text, plus what it takes to write it back byte-for-byte."""

    path: str
    text: str  # decoded, without the BOM
    encoding: str = "utf-8"
    bom: bool = False

    @property
    def newline(self) -> str:
        match = _NEWLINE.search(self.text)
        return match.group() if match else "\n"

    @classmethod
    def from_bytes(cls, path: str, data: bytes) -> SourceFile:
        bom = data.startswith(UTF8_BOM)
        body = data[len(UTF8_BOM) :] if bom else data
        try:
            import tokenize

            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:
            if "encoding problem" in str(exc) or "unknown encoding" in str(exc):
                raise DecodeError(f"cannot determine the encoding: {exc}") from None
            encoding = "utf-8"  # undecodable first lines: the decode below says where
        if encoding == "utf-8-sig":
            encoding = "utf-8"
        try:
            text = body.decode(encoding)
        except UnicodeDecodeError as exc:
            line = body[: exc.start].count(b"\n") + 1
            column = exc.start - (body.rfind(b"\n", 0, exc.start) + 1) + 1
            raise DecodeError(
                f"cannot decode as {encoding}: invalid byte {body[exc.start:exc.start + 1]!r}",
                line,
                column,
            ) from None
        except LookupError:
            raise DecodeError(f"unknown encoding {encoding!r}") from None
        return cls(path=path, text=text, encoding=encoding, bom=bom)

    @classmethod
    def read(cls, path: str | Path) -> SourceFile:
        with open(path, "rb") as handle:
            data = handle.read()
        return cls.from_bytes(str(path), data)

    def with_text(self, text: str) -> SourceFile:
        return replace(self, text=text)

    def to_bytes(self) -> bytes:
        data = self.text.encode(self.encoding)
        return UTF8_BOM + data if self.bom else data


def write_atomic(path: str | Path, data: bytes) -> bool:
    """Replace ``path`` by ``data`` atomically, keeping its mode. Returns False if unchanged."""
    target = Path(path)
    try:
        if target.read_bytes() == data:
            return False
    except OSError:
        pass
    mode = None
    try:
        mode = target.stat().st_mode & 0o7777
    except OSError:
        pass
    resolved = target.resolve()
    import tempfile

    fd, tmp_name = tempfile.mkstemp(
        dir=resolved.parent, prefix=f".{resolved.name}.", suffix=".torchlint-tmp"
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp_name, mode)
        os.replace(tmp_name, resolved)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except OSError:
            pass
        raise
    return True
