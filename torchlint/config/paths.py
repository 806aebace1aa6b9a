"""Paths relative to a settings root, and glob matching for excludes and per-file ignores."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from functools import lru_cache


def relative_to(path: str, root: str) -> str:
    """``path`` relative to ``root``, as posix; never raises (symlink loops included)."""
    relative = path
    # plain string paths first (fast); real paths when a symlink is in the way
    for absolute, base in _candidates(path, root):
        if absolute == base or absolute.startswith(base.rstrip(os.sep) + os.sep):
            relative = os.path.relpath(absolute, base)
            break
    relative = os.path.normpath(relative)
    return relative if os.sep == "/" else relative.replace(os.sep, "/")


@lru_cache(maxsize=64)
def _absolute_root(root: str) -> str:
    return os.path.abspath(root)


def _candidates(path: str, root: str) -> Iterator[tuple[str, str]]:
    yield os.path.abspath(path), _absolute_root(root)
    yield _real_path(path), _real_directory(root)


def _real_path(path: str) -> str:
    """``os.path.realpath(path)``, resolving each folder once a run."""
    head, tail = os.path.split(os.path.abspath(path))
    if not tail or os.path.islink(path):
        return os.path.realpath(path)
    return os.path.join(_real_directory(head), tail)


@lru_cache(maxsize=4096)
def _real_directory(directory: str) -> str:
    return os.path.realpath(directory)


@lru_cache(maxsize=64)
def split_patterns(patterns: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    """Plain folder or file names (matched against each path part, as :func:`_glob_match`
    would) apart from real globs."""
    names: set[str] = set()
    globs: list[str] = []
    for pattern in patterns:
        plain = pattern.rstrip("/").removeprefix("./")
        if "/" in plain or any(c in plain for c in "*?["):
            globs.append(pattern)
        else:
            names.add(plain)
    return frozenset(names), tuple(globs)


def glob_match(relative: str, pattern: str) -> bool:
    pattern = pattern.rstrip("/")
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if fnmatch.fnmatchcase(relative, pattern) or relative.startswith(pattern + "/"):
        return True
    if "/" not in pattern:
        return any(fnmatch.fnmatchcase(part, pattern) for part in relative.split("/"))
    return fnmatch.fnmatchcase(relative, pattern + "/*")
