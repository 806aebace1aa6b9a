"""Which files to lint: .py/.pyi under directories, minus excluded and virtualenv folders."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from torchlint.config.settings import Settings

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")


@dataclass
class Discovery:
    files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _is_virtualenv(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "pyvenv.cfg"))


def discover(paths: list[str], settings: Settings,
             suffixes: tuple[str, ...] = PYTHON_SUFFIXES) -> Discovery:
    """Expand ``paths`` into a sorted, de-duplicated list of files to lint."""
    result = Discovery()
    seen: set[str] = set()

    def add(path: str) -> None:
        key = os.path.normcase(os.path.abspath(path))
        if key not in seen:
            seen.add(key)
            result.files.append(path)

    for raw in paths:
        if os.path.isdir(raw):
            for directory, dirnames, filenames in os.walk(raw, followlinks=False):
                dirnames[:] = sorted(
                    d for d in dirnames
                    if not settings.is_excluded(os.path.join(directory, d))
                    and not _is_virtualenv(os.path.join(directory, d))
                )
                for name in sorted(filenames):
                    full = os.path.normpath(os.path.join(directory, name))
                    if name.endswith(suffixes) and not settings.is_excluded(full):
                        add(full)
        elif os.path.lexists(raw):
            if not settings.is_excluded(raw, explicit=True):
                add(raw)
        else:
            result.missing.append(raw)
    result.files.sort(key=lambda p: Path(p).as_posix())
    return result
