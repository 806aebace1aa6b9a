"""Which settings each file gets: the nearest configuration, as Ruff resolves its own.

- Each file is linted with the configuration nearest to it: the first folder, from the
  file's own upwards, holding ``.torchlint.toml``, ``torchlint.toml`` or a ``pyproject.toml``
  with a ``[tool.torchlint]`` table (in that order when a folder has several). Parent
  configurations are not merged in; a file inherits with ``extend = "../pyproject.toml"``.
- Relative paths in a configuration are relative to its own folder.
- Where no project configuration applies, the user-level one does (relative to the current
  directory), else the defaults.
- ``--config FILE`` gives every file that configuration; ``--isolated`` reads none.
- ``--config KEY=VALUE`` and the command line's options go on top of every configuration.
- ``target-torch``, when nothing sets it, is inferred from the nearest folder (between the
  file's and its configuration's) that declares a torch requirement.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from torchlint.config.file_settings import FileSettings
from torchlint.config.files import config_in, load_chain, user_config
from torchlint.config.gitignore import IgnoreFiles
from torchlint.config.layers import Layer, merge
from torchlint.config.memo import Memo, stat_signature
from torchlint.config.settings import Settings
from torchlint.config.torch_target import (
    Declaration,
    declaration_files,
    declarations_in,
    declared_target,
)


def _is_under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class Workspace:
    """Settings per file for one run. ``overrides``: layers applied on top of every
    configuration (``--config KEY=VALUE``, then the command line's options)."""

    def __init__(self, *, config: Path | None = None, overrides: Sequence[Layer] = (),
                 isolated: bool = False, cwd: str | None = None,
                 honour_noqa: bool = True, memo: Memo | None = None) -> None:
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.noqa = honour_noqa
        self.overrides = tuple(overrides)
        self.isolated = isolated
        self.fixed_config = config
        self._listings: dict[str, frozenset[str]] = {}
        self._by_folder: dict[str, Settings] = {}
        self._final: dict[str, Settings] = {}  # with the torch target inferred
        self._declarations: dict[str, list[Declaration]] = {}
        self._inferred: dict[tuple[int, str | None], Settings] = {}
        self._fixed: Settings | None = None
        self.memo = memo if memo is not None else Memo(None)
        self.ignores = IgnoreFiles(self.listing, self._project_top, self.memo)
        if config is not None:
            chain = load_chain(config, explicit=True)
            root = os.path.dirname(os.path.abspath(config))
            self._fixed = self._merge([*chain, *self.overrides], root=root, config_file=str(config),
                                extends=tuple(layer.source for layer in chain[-2::-1]))
        elif isolated:
            self._fixed = self._merge(self.overrides, root=self.cwd)

    def _merge(self, layers: Sequence[Layer], **where: Any) -> Settings:
        settings = merge(layers, **where)
        return settings if self.noqa else replace(settings, noqa=False)

    @classmethod
    def of(cls, settings: Settings) -> Workspace:
        """One ``settings`` for every file, as ``--config`` gives (tests, benchmarks)."""
        workspace = cls(isolated=True, cwd=settings.root)
        workspace._fixed = settings
        return workspace

    # ------------------------------------------------------------ the file system
    def listing(self, folder: str) -> frozenset[str]:
        """The entries of ``folder`` (read once a run)."""
        names = self._listings.get(folder)
        if names is None:
            try:
                names = frozenset(os.listdir(folder))
            except OSError:
                names = frozenset()
            self._listings[folder] = names
        return names

    def note_listing(self, folder: str, names: Sequence[str]) -> None:
        """What a walk found in ``folder``, so it is not listed again."""
        self._listings.setdefault(folder, frozenset(names))

    def _project_top(self, folder: str) -> str:
        """Outside a repository: the folder of the configuration, else the current one."""
        settings = self.settings_for_folder(folder, infer=False)
        if settings.config_file and _is_under(folder, settings.root):
            return settings.root
        return self.cwd if _is_under(folder, self.cwd) else folder

    # ------------------------------------------------------------ settings
    def _fallback(self) -> Settings:
        """Settings where no project configuration applies."""
        user = None if self.isolated else user_config()
        if user is None:
            return self._merge(self.overrides, root=self.cwd)
        chain = [Layer(layer.values, self.cwd, layer.source) for layer in load_chain(user)]
        return self._merge([*chain, *self.overrides], root=self.cwd, config_file=str(user),
                     extends=tuple(layer.source for layer in chain[-2::-1]))

    def _configured(self, folder: str) -> Settings:
        """The settings of the configuration nearest to ``folder`` (no inference)."""
        if self._fixed is not None:
            return self._fixed
        missing: list[str] = []
        current = folder
        while current not in self._by_folder:
            missing.append(current)
            found = config_in(current, self.listing(current))
            if found is not None:
                chain = load_chain(found)
                self._by_folder[current] = self._merge(
                    [*chain, *self.overrides], root=current, config_file=str(found),
                    extends=tuple(layer.source for layer in chain[-2::-1]))
                break
            parent = os.path.dirname(current)
            if parent == current:
                self._by_folder[current] = self._fallback()
                break
            current = parent
        settings = self._by_folder[current]
        for visited in missing:
            self._by_folder[visited] = settings
        return settings

    def settings_for_folder(self, folder: str, *, infer: bool = True) -> Settings:
        """The settings of the files directly in ``folder`` (an absolute path)."""
        if infer:
            known = self._final.get(folder)
            if known is None:
                known = self._final[folder] = self._settings_for_folder(folder)
            return known
        return self._configured(folder)

    def _settings_for_folder(self, folder: str) -> Settings:
        settings = self._configured(folder)
        if self.isolated or "target-torch" in dict(settings.origins):
            return settings
        declaring = self._declaring_folder(folder, settings)
        key = (id(settings), declaring)
        if key not in self._inferred:
            inferred = settings
            if declaring is not None:
                release, where = declared_target(self._declared(declaring))
                source = os.path.relpath(declaring, self.cwd) if _is_under(
                    declaring, self.cwd) else declaring
                where = where if source == "." else f"{source}/{where}"
                inferred = replace(settings, target_torch=release,
                                   origins=(*settings.origins,
                                            ("target-torch", f"inferred from {where}")))
            self._inferred[key] = inferred
        return self._inferred[key]

    def settings_for(self, path: str) -> Settings:
        """The settings of ``path`` (a file, or a folder for the files in it)."""
        absolute = os.path.abspath(path)
        folder = absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
        return self.settings_for_folder(folder)

    def for_file(self, path: str) -> FileSettings:
        """The settings the file ``path`` is linted with."""
        folder = os.path.dirname(os.path.abspath(path))
        return self.settings_for_folder(folder).for_file(path)

    # ------------------------------------------------------------ the torch target
    def _declared(self, folder: str) -> list[Declaration]:
        """The torch requirements ``folder`` declares (from the memo while its declaration
        files are unchanged)."""
        if folder not in self._declarations:
            names = self.listing(folder)
            files = declaration_files(folder, names)
            found: list[Declaration] = []
            if files:
                signature = stat_signature(files)
                known = self.memo.get(f"torch:{folder}", signature)
                if isinstance(known, list):
                    found = [Declaration(tuple(r) if r else None, w)  # type: ignore[arg-type]
                             for r, w in known]
                else:
                    found = declarations_in(folder, names)
                    self.memo.put(f"torch:{folder}", signature,
                                  [[list(d.release) if d.release else None, d.where]
                                   for d in found])
            self._declarations[folder] = found
        return self._declarations[folder]

    def _declaring_folder(self, folder: str, settings: Settings) -> str | None:
        """The nearest folder from ``folder`` up that declares torch, not above the
        configuration's folder or the top of the repository."""
        limits = [settings.root] if settings.config_file and _is_under(
            folder, settings.root) else []
        repository = self.ignores.repository_root(folder)
        if repository is not None:
            limits.append(repository)
        limit = max(limits, key=len) if limits else None
        current = folder
        while True:
            if self._declared(current):
                return current
            parent = os.path.dirname(current)
            if current == limit or parent == current:
                return None
            current = parent
