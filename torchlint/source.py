"""Reading a source file faithfully and writing it back the same way."""

from __future__ import annotations

import io
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
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
        return cls.from_bytes(str(path), read_file(path))

    def with_text(self, text: str) -> SourceFile:
        return replace(self, text=text)

    def to_bytes(self) -> bytes:
        data = self.text.encode(self.encoding)
        return UTF8_BOM + data if self.bom else data


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def special_kind(mode: int) -> str | None:
    """What a file of this ``st_mode`` is when it is not a regular file ("a FIFO"...);
    None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


class NotRegularFile(OSError):
    """A path that is a FIFO, socket, device or directory: never read, never written."""

    def __init__(self, path: str | Path, kind: str) -> None:
        super().__init__(0, f"not a regular file ({kind})", str(path))
        self.kind = kind


def _is_stdin(info: os.stat_result) -> bool:
    """Is ``info`` the pipe this process reads as stdin (``/dev/stdin`` named explicitly)?"""
    if not stat.S_ISFIFO(info.st_mode):
        return False
    try:
        stdin = os.fstat(0)
    except OSError:
        return False
    return (stdin.st_dev, stdin.st_ino) == (info.st_dev, info.st_ino)


def _check_regular(path: str | Path, info: os.stat_result, stdin: bool) -> None:
    kind = special_kind(info.st_mode)
    if kind is not None and not (stdin and _is_stdin(info)):
        raise NotRegularFile(path, kind)


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | \
    getattr(os, "O_BINARY", 0)


def read_file(path: str | Path, *, stdin: bool = True) -> bytes:
    """The bytes of the regular file ``path``. Never blocks: a FIFO, socket or device
    raises :class:`NotRegularFile` (checked before opening, and again on what was opened,
    which is opened without waiting for a FIFO's writer). ``stdin``: the pipe this process
    reads as stdin, named as ``/dev/stdin``, is read to its end."""
    _check_regular(path, os.stat(path), stdin)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        _check_regular(path, os.fstat(fd), stdin)
        if _OPEN_FLAGS & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            return handle.read()
    finally:
        if fd >= 0:
            os.close(fd)


def _read_only(info: os.stat_result, path: Path) -> bool:
    """No write permission: for this user, or (as root, who may write anything) for
    anybody."""
    return not info.st_mode & 0o222 or not os.access(path, os.W_OK)


def write_atomic(path: str | Path, data: bytes) -> bool:
    """Replace ``path`` by ``data`` atomically, keeping its mode. Returns False if unchanged.

    Raises :class:`PermissionError` ("read-only") for a read-only file rather than
    replacing it, and :class:`NotRegularFile` for a FIFO, socket or device. A file with
    several hard links is rewritten in place, so the links stay one file."""
    target = Path(path)
    resolved = target.resolve()
    try:
        info = os.stat(resolved)
    except FileNotFoundError:
        info = None
    if info is not None:
        kind = special_kind(info.st_mode)
        if kind is not None:
            raise NotRegularFile(path, kind)
        if _read_only(info, resolved):
            raise PermissionError(13, "read-only", str(path))
        try:
            old = read_file(resolved, stdin=False)
        except OSError:
            old = None
        if old == data:
            return False
        if info.st_nlink > 1 and old is not None:
            _write_in_place(resolved, data, old)
            return True
    mode = info.st_mode & 0o7777 if info is not None else None
    import tempfile

    # a short name: the file's own name may be close to the file system's limit
    with _interrupts_held():  # a Ctrl-C lands after the file is whole, not in a temp file
        fd, tmp_name = tempfile.mkstemp(dir=resolved.parent, prefix=".",
                                        suffix=".torchlint-tmp")
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


@contextmanager
def _interrupts_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends (where the platform can hold them):
    an interrupt between creating the temporary file and replacing the target, or during
    its removal, would leave the temporary file behind."""
    import signal

    hold = getattr(signal, "pthread_sigmask", None)
    if hold is None:
        yield
        return
    before = hold(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        hold(signal.SIG_SETMASK, before)


def _write_in_place(path: Path, data: bytes, old: bytes) -> None:
    """Overwrite ``path`` keeping its inode, so that its hard links stay one file; on a
    failure (or an interrupt) the old bytes are put back."""
    with open(path, "r+b") as handle:
        try:
            handle.write(data)
            handle.truncate()
            handle.flush()
            os.fsync(handle.fileno())
        except BaseException:
            handle.seek(0)
            handle.write(old)
            handle.truncate()
            handle.flush()
            raise
