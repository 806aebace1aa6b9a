"""Which files to lint: .py/.pyi/.ipynb under the given folders, minus what the settings
exclude, what git ignores and virtualenvs; plus the files named explicitly.

Each folder's entries are judged by the settings of that folder (its nearest
configuration): its ``exclude``/``extend-exclude`` and, unless ``respect-gitignore = false``,
the ignore files (see :mod:`torchlint.config.gitignore`). A path named on the command line
is always linted, as in Ruff, unless its settings say ``force-exclude = true`` and an
exclusion matches it. A folder named explicitly is entered even when git ignores it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from torchlint.config.settings import Settings
from torchlint.config.workspace import Workspace
from torchlint.source import special_kind

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")


@dataclass
class Discovery:
    files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    # paths left out, and why ("exclude 'build'", ".gitignore"): for --verbose
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # folders walked (absolute): a run covers everything under them (cache pruning)
    walked: list[str] = field(default_factory=list)


def _is_virtualenv(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "pyvenv.cfg"))


def _special(path: str) -> str | None:
    """What ``path`` is when it is a FIFO, socket or device (reading one could block
    forever); None for a regular file, or one that cannot be looked at (reading it says
    why)."""
    try:
        return special_kind(os.stat(path).st_mode)
    except OSError:
        return None


def discover(paths: list[str], source: Workspace | Settings,
             suffixes: tuple[str, ...] = PYTHON_SUFFIXES) -> Discovery:
    """Expand ``paths`` into a sorted, de-duplicated list of files to lint."""
    workspace = source if isinstance(source, Workspace) else Workspace.of(source)
    result = Discovery()
    seen: set[str] = set()

    def add(path: str) -> None:
        key = os.path.normcase(os.path.abspath(path))
        if key not in seen:
            seen.add(key)
            result.files.append(path)

    for raw in paths:
        if not os.path.lexists(raw):
            result.missing.append(raw)
            continue
        settings = workspace.settings_for(raw)
        if settings.force_excluded(raw):
            result.skipped.append((raw, "force-exclude"))
            continue
        if os.path.isdir(raw):
            result.walked.append(os.path.abspath(raw))
            _walk(raw, workspace, suffixes, add, result)
        else:
            add(raw)
    result.files.sort(key=lambda p: Path(p).as_posix())
    return result


def _walk(root: str, workspace: Workspace, suffixes: tuple[str, ...],
          add: Callable[[str], None], result: Discovery) -> None:
    ignores = workspace.ignores
    absolute_root = os.path.abspath(root)
    # a folder named explicitly is entered even when git ignores it: the ignore files
    # above it then no longer apply below it (as when walking from there)
    fresh_top: str | None = None
    parent, name = os.path.split(absolute_root)
    if name and workspace.settings_for_folder(parent, infer=False).respect_gitignore:
        if ignores.ignored_entries(parent, [(name, True)]):
            fresh_top = absolute_root
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        folder = os.path.abspath(directory)
        workspace.note_listing(folder, [*dirnames, *filenames])
        settings = workspace.settings_for_folder(folder, infer=False)
        base = settings.relative(folder)  # once per folder: the entries' paths extend it
        inside = "" if base == "." else base + "/"
        exclusions = (*settings.exclude, *settings.extend_exclude)
        entries = [(name, True) for name in sorted(dirnames)] + [
            (name, False) for name in sorted(filenames) if name.endswith(suffixes)]
        why: dict[str, str] = {}
        for name, is_dir in entries:
            excluded = settings.excluded_by(os.path.join(directory, name), exclusions,
                                            relative=inside + name)
            if excluded is not None:
                why[name] = f"excluded by {excluded!s}"
            elif is_dir and name == ".git" and settings.respect_gitignore:
                why[name] = "git directory"
        if settings.respect_gitignore:  # what remains meets the ignore files
            left = [(name, is_dir) for name, is_dir in entries if name not in why]
            for name, source in ignores.ignored_entries(folder, left, fresh_top).items():
                why[name] = f"ignored by {source}"
        kept = []
        for name, is_dir in entries:
            path = os.path.normpath(os.path.join(directory, name))
            if is_dir and name not in why and _is_virtualenv(path):
                why[name] = "virtualenv"
            elif not is_dir and name not in why:
                kind = _special(path)
                if kind is not None:
                    why[name] = f"not a regular file ({kind})"
            if name in why:
                result.skipped.append((path, why[name]))
            elif is_dir:
                kept.append(name)
            else:
                add(path)
        dirnames[:] = kept
