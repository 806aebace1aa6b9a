"""Per-file result cache: plain lint results, keyed by everything that decides them.

An entry's key is a hash of: the cache format, torchlint's version, the Python and
libcst versions, a fingerprint of the engine and rule source files (so editing a
rule invalidates it), the fingerprint of the settings the file is linted with, the
file's path and its bytes. Only
the lint result of those bytes is stored (diagnostics with their resolved fixes),
never a fixed text, so a fix run can never write something stale: it uses an entry
only when that entry holds no fix it would apply.

Entries are small JSON files, one per file, written atomically (see :class:`Cache`).
Anything unreadable, corrupt or written for another key is ignored and rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from torchlint.diagnostic import Applicability, Diagnostic, Edit, Fix, ImportNeed

if TYPE_CHECKING:
    from torchlint.analysis.project import Dependency

FORMAT = 3  # 3: the count of preview-only findings
_README = "Created by torchlint. Safe to delete at any time.\n"


def _engine_files() -> list[str]:
    """Source files whose content decides lint results: torchlint's own and every rule's.

    Found without importing a rule (a warm run never loads libcst), except rules that
    plugins add, whose modules are imported to find their files.
    """
    import importlib.util

    import torchlint
    from torchlint.registry import plugin_entry_points

    files = {str(p) for p in Path(torchlint.__file__).resolve().parent.rglob("*.py")}
    spec = importlib.util.find_spec("torchlint.rules")
    for location in (spec.submodule_search_locations or []) if spec else []:
        files.update(str(p) for p in Path(location).resolve().rglob("*.py"))
    if plugin_entry_points():
        import inspect

        from torchlint.registry import all_rules

        for rule in all_rules().values():
            try:
                files.add(str(Path(inspect.getfile(rule)).resolve()))
            except (TypeError, OSError):
                files.add(f"{rule.__module__}.{rule.__qualname__}")
    return sorted(files)


def code_fingerprint(files: Iterable[str] | None = None) -> str:
    """A hash of the engine and rule sources (names and contents)."""
    digest = hashlib.sha256()
    for name in files if files is not None else _engine_files():
        digest.update(name.encode("utf-8", "surrogatepass") + b"\0")
        try:
            with open(name, "rb") as handle:
                digest.update(hashlib.sha256(handle.read()).digest())
        except OSError:
            digest.update(b"?")
    return digest.hexdigest()


def cache_basis(code_hash: str | None = None) -> str:
    """The part of every key shared by one run: versions and code. (The settings a file
    is linted with are part of its own key.)"""
    from torchlint import __version__

    parts = (
        f"torchlint-cache-{FORMAT}",
        __version__,
        sys.version,
        _libcst_version(),
        code_hash if code_hash is not None else code_fingerprint(),
    )
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _libcst_version() -> str:
    """libcst's version file, read without importing libcst (that takes a quarter second)."""
    import importlib.util

    spec = importlib.util.find_spec("libcst")
    if spec is None or not spec.origin:
        return "?"
    try:
        return Path(spec.origin).with_name("_version.py").read_text(encoding="utf-8")
    except OSError:
        return _dist_version("libcst")


def _dist_version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # pragma: no cover - metadata missing
        return "?"


# ------------------------------------------------------------------ (de)serialising
def _encode_fix(fix: Fix | None) -> object:
    if fix is None:
        return None
    edits = [[e.start, e.end, e.text] for e in fix.edits if isinstance(e, Edit)]
    if len(edits) != len(fix.edits):
        raise ValueError("unresolved fix")
    return [fix.applicability.value, edits, [i.line for i in fix.imports]]


def _decode_fix(data: object) -> Fix | None:
    if data is None:
        return None
    applicability, edits, imports = data  # type: ignore[misc]
    return Fix(
        Applicability(applicability),
        tuple(Edit(int(s), int(e), str(t)) for s, e, t in edits),
        tuple(ImportNeed(str(line)) for line in imports),
    )


def encode(diagnostics: Iterable[Diagnostic]) -> list[object]:
    return [
        [d.line, d.column, d.end_line, d.end_column, d.code, d.name, d.message,
         _encode_fix(d.fix), d.cell, [list(pair) for pair in d.extra]]
        for d in diagnostics
    ]


def decode(path: str, rows: Iterable[object]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for row in rows:
        line, column, end_line, end_column, code, name, message, fix, cell, extra = row  # type: ignore[misc]
        out.append(Diagnostic(
            path, int(line), int(column), int(end_line), int(end_column), str(code), str(name),
            str(message), _decode_fix(fix), None if cell is None else int(cell),
            tuple((str(k), str(v)) for k, v in extra),
        ))
    return out


# ------------------------------------------------------------------ the store
MARKER = "CACHEDIR.TAG"
_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
        "# This file is a cache directory tag created by torchlint.\n"
        "# For information about cache directory tags see https://bford.info/cachedir/\n")
FOLDER = "FOLDER"  # in each folder's entry directory: the source folder it stands for
STALE_SECONDS = 7 * 24 * 3600  # a generation of entries unused this long is deleted
_STAMP = "last-run"  # the run that last pruned this generation (its mtime: when)
_PRUNE_AGAIN = 3600  # an unchanged run prunes again after this many seconds


@lru_cache(maxsize=8192)
def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@lru_cache(maxsize=4096)
def _entry_folder(generation: str, folder: str, cwd: str) -> str:
    """The entry directory of the source ``folder`` (as written, relative to ``cwd``)."""
    return os.path.join(generation, _digest(os.path.normpath(os.path.join(cwd, folder))))


class Entry(NamedTuple):
    """A cached lint result."""

    diagnostics: list[Diagnostic]
    preview_only: int  # findings left out because preview is off (for the summary's hint)


@dataclass(frozen=True)
class Cache:
    """A directory of entries; ``basis`` is :func:`cache_basis` for this run.

    One entry per file: ``<dir>/<basis>/<folder digest>/<name digest>.json``, replaced when
    the file or its settings change, so the cache holds at most one entry per file and
    torchlint version. :meth:`prune` removes what a run no longer needs."""

    directory: str
    basis: str

    def key(self, path: str, data: bytes, settings_fingerprint: str) -> str:
        """The key of ``path`` holding ``data``, linted with settings of that fingerprint."""
        digest = hashlib.sha256(self.basis.encode())
        digest.update(b"\0" + path.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(settings_fingerprint.encode() + b"\0")
        digest.update(data)
        return digest.hexdigest()

    @property
    def generation(self) -> str:
        """The directory of this torchlint version's entries."""
        return os.path.join(self.directory, self.basis[:16])

    def _location(self, path: str) -> tuple[str, str]:
        folder, name = os.path.split(path)
        return _entry_folder(self.generation, folder, os.getcwd()), _digest(name) + ".json"

    def get(self, path: str, key: str) -> list[Diagnostic] | None:
        """The cached diagnostics, or None when missing, corrupt, foreign, or learned from
        a project file that has changed since."""
        entry = self.lookup(path, key)
        return entry.diagnostics if entry is not None else None

    def lookup(self, path: str, key: str) -> Entry | None:
        """The cached result (see :meth:`get`)."""
        folder, name = self._location(path)
        try:
            with open(os.path.join(folder, name), "rb") as handle:
                payload = json.loads(handle.read())
            if not isinstance(payload, dict) or payload.get("key") != key:
                return None
            if not all(_unchanged(*dependency) for dependency in payload.get("learned", ())):
                return None
            return Entry(decode(path, payload["diagnostics"]), int(payload["preview"]))
        except (OSError, ValueError, TypeError, KeyError, UnicodeError, RecursionError):
            return None

    def put(self, path: str, key: str, diagnostics: Iterable[Diagnostic],
            dependencies: Iterable[Dependency] = (), preview_only: int = 0) -> bool:
        """Store ``path``'s entry atomically; a failure (read-only disk...) is skipped.

        ``dependencies``: the project's files the result learned from; the entry is valid
        only while each still has the content it was read with. ``preview_only``: how many
        more findings preview mode would report."""
        folder, name = self._location(path)
        try:
            if not os.path.isdir(folder):
                os.makedirs(folder, exist_ok=True)
                self._mark_root()
                _write(os.path.join(folder, FOLDER),
                       os.path.dirname(os.path.abspath(path)))
        except (OSError, UnicodeError):
            return False
        try:
            # stamped once the cache's own folders exist: creating the cache inside a
            # project folder changes that folder's time, which a result that scanned the
            # folder (a dependency on the folder itself) would otherwise take for a new file
            learned = [_stamp(d) for d in dependencies]
            payload = json.dumps({"key": key, "diagnostics": encode(diagnostics),
                                  "learned": learned, "preview": preview_only},
                                 ensure_ascii=False, separators=(",", ":"))
        except (ValueError, TypeError):
            return False
        try:
            _write(os.path.join(folder, name), payload)
        except (OSError, UnicodeError):
            return False
        return True

    def _mark_root(self) -> None:
        """A .gitignore, a cache directory tag and a note, so the cache never ends up in
        version control or backups."""
        for name, text in ((".gitignore", "*\n"), (MARKER, _TAG), ("README", _README)):
            target = os.path.join(self.directory, name)
            if not os.path.exists(target):
                try:
                    with open(target, "w", encoding="utf-8") as handle:
                        handle.write(text)
                except OSError:
                    pass

    def prune(self, touched: Iterable[str], walked: Iterable[str]) -> int:
        """Delete what a run no longer needs; returns how many entries went.

        ``touched``: the files of the run (their entries stay). ``walked``: the folders the
        run searched whole: an entry for a file under them that the run did not touch
        belongs to a file that was deleted, renamed or excluded. Entries of other
        torchlint versions go once unused for a week. Never raises."""
        touched = sorted({os.path.abspath(path) for path in touched})
        roots = [os.path.abspath(w).rstrip(os.sep) + os.sep for w in walked]
        run = hashlib.sha256("\0".join([*touched, "", *sorted(roots)]).encode(
            "utf-8", "surrogatepass")).hexdigest()
        stamp = os.path.join(self.generation, _STAMP)
        try:
            if _read(stamp) == run and time.time() - os.stat(stamp).st_mtime < _PRUNE_AGAIN:
                return 0  # the same files as the last run: nothing can have gone stale
        except OSError:
            pass
        keep: dict[str, set[str]] = {}
        sources: dict[str, str] = {}
        for path in touched:
            location, name = self._location(path)
            digest = os.path.basename(location)
            keep.setdefault(digest, set()).add(name)
            sources.setdefault(digest, os.path.dirname(path))
        removed = 0
        try:
            subfolders = list(os.scandir(self.generation)) if roots else []
        except OSError:
            subfolders = []
        for sub in subfolders:
            if not sub.is_dir(follow_symlinks=False):
                continue
            source = sources.get(sub.name) or _read(os.path.join(sub.path, FOLDER))
            covered = source is not None and any((source + os.sep).startswith(r)
                                                 for r in roots)
            if not covered:
                continue
            kept = keep.get(sub.name)
            if kept is None:
                removed += _remove_tree(sub.path)
                continue
            for entry in os.scandir(sub.path):
                if entry.name.endswith(".json") and entry.name not in kept:
                    removed += _remove(entry.path)
        self._forget_old_generations(run)
        return removed

    def _forget_old_generations(self, run: str) -> None:
        try:
            os.makedirs(self.generation, exist_ok=True)
            _write(os.path.join(self.generation, _STAMP), run)
            others = [e for e in os.scandir(self.directory) if e.is_dir(follow_symlinks=False)
                      and e.path != self.generation and len(e.name) in (2, 16)]
        except OSError:
            return
        now = time.time()
        for other in others:
            if len(other.name) == 2:  # the layout before one entry per file
                _remove_tree(other.path)
                continue
            try:
                used = os.stat(os.path.join(other.path, _STAMP)).st_mtime
            except OSError:
                used = other.stat().st_mtime
            if now - used > STALE_SECONDS:
                _remove_tree(other.path)


def _stamp(dependency: Dependency) -> list[object]:
    """[path, digest, mtime_ns, size]: the size and time spare re-reading an unchanged file."""
    try:
        stat = os.stat(dependency.path)
        return [dependency.path, dependency.digest, stat.st_mtime_ns, stat.st_size]
    except OSError:
        return [dependency.path, dependency.digest, -1, -1]


def _unchanged(path: str, digest: str, mtime_ns: int, size: int) -> bool:
    try:
        stat = os.stat(path)
    except OSError:
        return False
    if stat.st_mtime_ns == mtime_ns and stat.st_size == size:
        return True
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest() == digest
    except OSError:
        return False


def _write(target: str, text: str) -> None:
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="surrogatepass") as handle:
            return handle.read()
    except (OSError, UnicodeError):
        return None


def _remove(path: str) -> int:
    try:
        os.unlink(path)
        return 1
    except OSError:
        return 0


def _remove_tree(path: str) -> int:
    import shutil

    count = sum(1 for e in os.scandir(path) if e.name.endswith(".json"))
    shutil.rmtree(path, ignore_errors=True)
    return count


def open_cache(cache_dir: str | os.PathLike[str] | None) -> Cache | None:
    if cache_dir is None:
        return None
    return Cache(os.path.abspath(os.fspath(cache_dir)), cache_basis())


def is_cache_dir(path: str) -> bool:
    """Was the folder made by torchlint (so ``torchlint clean`` may delete it)?"""
    tag = _read(os.path.join(path, MARKER)) or ""
    readme = _read(os.path.join(path, "README")) or ""
    return "torchlint" in tag or readme == _README


def clean(path: str) -> bool:
    """Delete the cache folder ``path`` if torchlint made it; True when it did."""
    import shutil

    if not os.path.isdir(path) or os.path.islink(path) or not is_cache_dir(path):
        return False
    shutil.rmtree(path, ignore_errors=True)
    return not os.path.exists(path)
