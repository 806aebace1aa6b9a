"""Answers about the file system that cost time to work out and stay true while the files
they come from are unchanged: which entries of a folder the ignore files leave out, and the
torch requirement a file declares. Kept between runs in the cache folder, so that a warm
run neither compiles ignore patterns nor parses requirements (nor imports the libraries
that do).

Each answer is stored with a signature of what it depends on (file sizes and modification
times, a folder's entries); an answer whose signature differs is worked out again. The
memo holds only the answers a run used, written atomically at the end of the run; an
unreadable or foreign memo is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from typing import Any

FILE_NAME = "discovery-memo.json"


def stat_signature(paths: Iterable[str]) -> list[list[object]]:
    """[path, mtime_ns, size] of each path ([path, -1, -1] when it does not exist)."""
    signature: list[list[object]] = []
    for path in paths:
        try:
            stat = os.stat(path)
            signature.append([path, stat.st_mtime_ns, stat.st_size])
        except OSError:
            signature.append([path, -1, -1])
    return signature


def names_digest(names: Iterable[str]) -> str:
    return hashlib.sha256("\0".join(sorted(names)).encode("utf-8", "surrogatepass")).hexdigest()


def _version_stamp() -> str:
    """What the answers were computed with: torchlint's version and the code that computes
    them (found without importing it)."""
    import importlib.util

    from torchlint import __version__

    parts = [__version__]
    here = os.path.dirname(os.path.abspath(__file__))
    locations = [os.path.join(here, name) for name in ("gitignore.py", "torch_target.py",
                                                         "memo.py")]
    for library in ("pathspec", "packaging"):
        spec = importlib.util.find_spec(library)
        if spec is not None and spec.origin:
            locations.append(spec.origin)
    parts += [f"{path}:{mtime}:{size}" for path, mtime, size in stat_signature(locations)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


class Memo:
    """A memo stored in ``folder`` (None: remember nothing between runs)."""

    def __init__(self, folder: str | None) -> None:
        self.path: str | None = None
        self._stored: dict[str, Any] | None = None
        self.keep_in(folder)

    def keep_in(self, folder: str | None) -> None:
        """Where the memo lives (before it is first used)."""
        self.path = os.path.join(folder, FILE_NAME) if folder else None
        self._used: dict[str, Any] = {}
        self._stamp = ""

    def _load(self) -> dict[str, Any]:
        if self._stored is None:
            self._stored = {}
            if self.path is not None:
                self._stamp = _version_stamp()
                try:
                    with open(self.path, encoding="utf-8") as handle:
                        data = json.load(handle)
                    if isinstance(data, dict) and data.get("stamp") == self._stamp and \
                            isinstance(data.get("answers"), dict):
                        self._stored = data["answers"]
                except (OSError, ValueError, UnicodeError, RecursionError):
                    pass
        return self._stored

    def get(self, key: str, signature: object) -> Any:
        """The answer stored under ``key`` for this ``signature``, or None."""
        if self.path is None:
            return None
        entry = self._load().get(key)
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == signature:
            self._used[key] = entry
            return entry[1]
        return None

    def put(self, key: str, signature: object, answer: object) -> None:
        if self.path is not None:
            self._used[key] = [signature, answer]

    def save(self) -> None:
        """Write the answers this run used (never raises)."""
        if self.path is None or not self._used:
            return
        if self._used == {k: v for k, v in self._load().items() if k in self._used} and len(
                self._used) == len(self._load()):
            return  # nothing changed
        import tempfile

        folder = os.path.dirname(self.path)
        try:
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-memo-")
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as handle:
                json.dump({"stamp": self._stamp or _version_stamp(), "answers": self._used},
                          handle, separators=(",", ":"))
            os.replace(tmp, self.path)
        except (OSError, UnicodeError, ValueError, TypeError):
            pass
