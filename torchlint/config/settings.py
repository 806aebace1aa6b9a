"""Settings of a run (what the configuration and the command line say), and the settings
each file is linted with (:meth:`Settings.for_file`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.config.paths import glob_match, relative_to, split_patterns
from torchlint.config.selectors import expand_selectors
from torchlint.registry import rule_catalog

if TYPE_CHECKING:
    from torchlint.analysis.project import Project
    from torchlint.rule import Rule

DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".pytest_cache", ".pytype", ".ruff_cache", ".svn",
    ".tox", ".venv", ".torchlint_cache", "__pycache__", "__pypackages__", "_build", "buck-out",
    "build", "dist", "node_modules", "site-packages", "venv",
)


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] | None = None  # None: the default rules
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    unfixable: tuple[str, ...] = ()
    # what the analysis knows beyond its defaults (extend the built-in lists)
    extend_module_bases: tuple[str, ...] = ()
    extend_model_names: tuple[str, ...] = ()
    noqa: bool = True  # honour noqa comments (flake8 --disable-noqa turns it off)
    preview: bool = False  # run preview rules and behaviours
    root: str = "."  # directory that relative globs are matched against
    config_file: str | None = None
    # command-line selection, applied after the file's (so it can re-enable what it ignores)
    cli_select: tuple[str, ...] | None = None
    cli_extend_select: tuple[str, ...] = ()
    cli_ignore: tuple[str, ...] = ()

    # ------------------------------------------------------------ rule sets
    def enabled_codes(self) -> frozenset[str]:
        return self._enabled

    @cached_property
    def _enabled(self) -> frozenset[str]:
        catalog = rule_catalog()
        if self.select is None:
            base = {code for code, entry in catalog.items() if entry.default}
        else:
            base = set(expand_selectors(self.select))
        base |= set(expand_selectors(self.extend_select))
        base -= set(expand_selectors(self.ignore))
        if self.cli_select is not None:
            base = set(expand_selectors(self.cli_select))
        base |= set(expand_selectors(self.cli_extend_select))
        base -= set(expand_selectors(self.cli_ignore))
        # a preview rule runs only in preview mode, even when selected by name
        return frozenset(code for code in base if self.preview or not catalog[code].preview)

    def selected_preview_codes(self) -> list[str]:
        """Preview rules the user named exactly while preview is off (they do not run)."""
        if self.preview:
            return []
        catalog = rule_catalog()
        named = {s.strip().upper() for s in (*(self.select or ()), *self.extend_select,
                                             *(self.cli_select or ()), *self.cli_extend_select)}
        return sorted(code for code in named if code in catalog and catalog[code].preview)

    def codes_for(self, path: str) -> frozenset[str]:
        codes = self.enabled_codes()
        if not self.per_file_ignores:
            return codes
        ignored: set[str] = set()
        relative = self.relative(path)
        for pattern, selectors in self.per_file_ignores:
            if glob_match(relative, pattern):
                ignored |= set(expand_selectors(selectors))
        return codes - ignored

    def rules_for(self, path: str) -> list[type[Rule]]:
        return list(self.for_file(path).rules)

    def unfixable_codes(self) -> frozenset[str]:
        return self._unfixable

    @cached_property
    def _unfixable(self) -> frozenset[str]:
        return frozenset(expand_selectors(self.unfixable))

    @cached_property
    def options(self) -> Options:
        """What the analysis and the rules read, with this configuration's extensions."""
        options = Options(preview=self.preview)
        return options.extended(module_bases=self.extend_module_bases,
                                model_names=self.extend_model_names)

    @cached_property
    def project(self) -> Project:
        """The project's files as rules learn from them (one per run: it keeps what it
        read). Absolute imports are also searched from the root and its ``src/``."""
        from torchlint.analysis.project import Project

        return Project((self.root, os.path.join(self.root, "src")))

    def for_file(self, path: str) -> FileSettings:
        """The settings ``path`` is linted with (its per-file ignores applied)."""
        return _file_settings(self.codes_for(path), self.unfixable_codes(), self.noqa,
                              self.options, self.project)

    # ------------------------------------------------------------ exclusion
    def relative(self, path: str) -> str:
        """``path`` relative to the root, as posix; never raises (symlink loops included)."""
        return relative_to(path, self.root)

    def is_excluded(self, path: str, *, explicit: bool = False) -> bool:
        """Excluded by a glob. Files named on the command line only meet the user's globs."""
        user_exclude = () if self.exclude == DEFAULT_EXCLUDE else self.exclude
        patterns = (*user_exclude, *self.extend_exclude) if explicit else (
            *self.exclude, *self.extend_exclude)
        relative = self.relative(path)
        names, globs = split_patterns(patterns)
        if names and not names.isdisjoint(relative.split("/")):
            return True
        return any(glob_match(relative, pattern) for pattern in globs)


@lru_cache(maxsize=256)
def _file_settings(codes: frozenset[str], unfixable: frozenset[str], noqa: bool,
                   options: Options, project: Project) -> FileSettings:
    return FileSettings(codes, unfixable=unfixable, noqa=noqa, options=options,
                        project=project)
