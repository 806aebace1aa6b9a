"""The settings of one configuration (its file, the files it extends, and the command line
on top), and the settings each file is linted with (:meth:`Settings.for_file`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Union

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.config.paths import glob_match, relative_to, split_patterns
from torchlint.config.selectors import expand_selectors
from torchlint.engine.limits import DEFAULT_MAX_FILE_SIZE
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
class PathGlob:
    """A glob written in a file whose folder is not the settings' root (an extended
    configuration), or on the command line: matched relative to ``base``."""

    pattern: str
    base: str

    def __str__(self) -> str:
        return self.pattern


Glob = Union[str, PathGlob]  # a plain str is relative to the settings' root


@dataclass(frozen=True)
class Selection:
    """What one layer (a configuration file, ``--config KEY=VALUE``, the options) says about
    rules. Layers apply in order: ``select`` replaces the codes chosen so far, then
    ``extend_select`` adds and ``ignore`` removes; ``fixable``/``extend_fixable``/``unfixable``
    work the same way on the codes whose fixes may be applied."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fixable: tuple[str, ...] | None = None
    extend_fixable: tuple[str, ...] = ()
    unfixable: tuple[str, ...] = ()


@dataclass(frozen=True)
class Settings:
    # the first layer of rule selection (more layers in ``selections``)
    select: tuple[str, ...] | None = None  # None: the default rules
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    unfixable: tuple[str, ...] = ()
    selections: tuple[Selection, ...] = ()
    per_file_ignores: tuple[tuple[Glob, tuple[str, ...]], ...] = ()
    exclude: tuple[Glob, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[Glob, ...] = ()
    force_exclude: bool = False  # exclusions apply to paths named explicitly too
    respect_gitignore: bool = True
    # what the analysis knows beyond its defaults (extend the built-in lists)
    extend_module_bases: tuple[str, ...] = ()
    extend_model_names: tuple[str, ...] = ()
    noqa: bool = True  # honour noqa comments (flake8 --disable-noqa turns it off)
    preview: bool = False  # run preview rules and behaviours
    target_torch: tuple[int, int] | None = None  # the oldest torch release the code runs on
    cache_dir: str | None = None  # where results are cached (absolute); None: the default
    max_file_size: int = DEFAULT_MAX_FILE_SIZE  # larger files are skipped with a warning
    root: str = "."  # directory that relative globs are matched against
    config_file: str | None = None  # the nearest configuration file
    extends: tuple[str, ...] = ()  # the files it builds on, nearest first
    # key -> where its value came from (a file, "--config", an option, "inferred from ...")
    origins: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    # ------------------------------------------------------------ rule sets
    def _layers(self) -> tuple[Selection, ...]:
        first = Selection(self.select, self.extend_select, self.ignore, unfixable=self.unfixable)
        return (first, *self.selections)

    def enabled_codes(self) -> frozenset[str]:
        return self._enabled

    @cached_property
    def _selected(self) -> frozenset[str]:
        """The codes the selection chooses, preview rules included."""
        base = {code for code, entry in rule_catalog().items() if entry.default}
        for layer in self._layers():
            if layer.select is not None:
                base = set(expand_selectors(layer.select))
            base |= set(expand_selectors(layer.extend_select))
            base -= set(expand_selectors(layer.ignore))
        return frozenset(base)

    @cached_property
    def _enabled(self) -> frozenset[str]:
        catalog = rule_catalog()
        # a preview rule runs only in preview mode, even when selected by name
        return frozenset(code for code in self._selected
                         if self.preview or not catalog[code].preview)

    def skipped_preview_codes(self) -> list[str]:
        """Preview rules the selection chooses (by name, prefix or ALL) that do not run
        because preview is off."""
        return sorted(self._selected - self._enabled)

    def selection_source(self) -> tuple[str, str]:
        """Who chose the rules, and the verb, for messages: ("the command line's --select",
        "chooses"), ("pyproject.toml's select and the command line's --ignore", "leave"),
        ("the default selection", "chooses")."""
        by_source: dict[str, list[str]] = {}
        for key in ("select", "extend-select", "ignore", "extend-ignore"):
            if self.origin(key) != "default":
                by_source.setdefault(self.origin(key).split("; ")[-1], []).append(key)
        if not by_source:
            return "the default selection", "chooses"
        parts = []
        for source, keys in by_source.items():
            if source == "command line":
                parts.append("the command line's " + " and ".join(f"--{k}" for k in keys))
                continue
            if os.path.isabs(source):
                from torchlint.config.errors import shown

                source = shown(source)
            parts.append(f"{source}'s {' and '.join(keys)}")
        keys = [k for ks in by_source.values() for k in ks]
        removes = any("ignore" in k for k in keys)
        verb = ("leave" if removes else "choose") + ("" if len(keys) > 1 else "s")
        return " and ".join(parts), verb

    def selected_preview_codes(self) -> list[str]:
        """Preview rules the user named exactly while preview is off (they do not run)."""
        if self.preview:
            return []
        catalog = rule_catalog()
        named = {s.strip().upper() for layer in self._layers()
                 for s in (*(layer.select or ()), *layer.extend_select)}
        return sorted(code for code in named if code in catalog and catalog[code].preview)

    def codes_for(self, path: str) -> frozenset[str]:
        return self._not_ignored(path, self.enabled_codes())

    def _not_ignored(self, path: str, codes: frozenset[str]) -> frozenset[str]:
        if not self.per_file_ignores or not codes:
            return codes
        ignored: set[str] = set()
        for pattern, selectors in self.per_file_ignores:
            relative, text = self._relative_for(path, pattern)
            if glob_match(relative, text):
                ignored |= set(expand_selectors(selectors))
        return codes - ignored

    def rules_for(self, path: str) -> list[type[Rule]]:
        return list(self.for_file(path).rules)

    def unfixable_codes(self) -> frozenset[str]:
        return self._unfixable

    @cached_property
    def _unfixable(self) -> frozenset[str]:
        every = set(rule_catalog())
        fixable = set(every)
        for layer in self._layers():
            if layer.fixable is not None:
                fixable = set(expand_selectors(layer.fixable))
            fixable |= set(expand_selectors(layer.extend_fixable))
            fixable -= set(expand_selectors(layer.unfixable))
        return frozenset(every - fixable)

    @cached_property
    def options(self) -> Options:
        """What the analysis and the rules read, with this configuration's extensions."""
        options = Options(preview=self.preview, target_torch=self.target_torch)
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
                              self.options, self.project, self.max_file_size,
                              self._not_ignored(path, self._selected - self._enabled))

    def origin(self, key: str) -> str:
        """Where the value of ``key`` came from ("default" when nothing set it)."""
        return dict(self.origins).get(key, "default")

    # ------------------------------------------------------------ exclusion
    def relative(self, path: str) -> str:
        """``path`` relative to the root, as posix; never raises (symlink loops included)."""
        return relative_to(path, self.root)

    def _relative_for(self, path: str, pattern: Glob) -> tuple[str, str]:
        if isinstance(pattern, PathGlob):
            return relative_to(path, pattern.base), pattern.pattern
        return self.relative(path), pattern

    @cached_property
    def _user_exclude(self) -> tuple[Glob, ...]:
        return () if self.exclude == DEFAULT_EXCLUDE else self.exclude

    def is_excluded(self, path: str, *, explicit: bool = False) -> bool:
        """Excluded by a glob. ``explicit``: a path the user named (a file open in an
        editor), which only the user's own globs exclude, never the default ones."""
        patterns = (*self._user_exclude, *self.extend_exclude) if explicit else (
            *self.exclude, *self.extend_exclude)
        return self.excluded_by(path, patterns) is not None

    def force_excluded(self, path: str) -> bool:
        """With ``force-exclude``: is a path named on the command line (or given as
        ``--stdin-filename``) excluded by any exclusion, the default ones included?"""
        return self.force_exclude and self.excluded_by(
            path, (*self.exclude, *self.extend_exclude)) is not None

    def excluded_by(self, path: str, patterns: tuple[Glob, ...], *,
                    relative: str | None = None) -> Glob | None:
        """The first of ``patterns`` that excludes ``path`` (or one of its folders).
        ``relative``: ``path`` relative to the root, when the caller knows it already."""
        plain = tuple(p for p in patterns if not isinstance(p, PathGlob))
        if plain:
            relative = relative if relative is not None else self.relative(path)
            names, globs = split_patterns(plain)  # type: ignore[arg-type]
            if names:
                hit = names.intersection(relative.split("/"))
                if hit:
                    return next(iter(hit))
            for pattern in globs:
                if glob_match(relative, pattern):
                    return pattern
        for glob in patterns:
            if isinstance(glob, PathGlob):
                relative = relative_to(path, glob.base)
                if not relative.startswith("../") and glob_match(relative, glob.pattern):
                    return glob
        return None

    def cache_location(self) -> str:
        """Where this configuration's results are cached."""
        return self.cache_dir or os.path.join(self.root, ".torchlint_cache")


@lru_cache(maxsize=256)
def _file_settings(codes: frozenset[str], unfixable: frozenset[str], noqa: bool,
                   options: Options, project: Project, max_file_size: int,
                   preview_codes: frozenset[str]) -> FileSettings:
    return FileSettings(codes, unfixable=unfixable, noqa=noqa, options=options,
                        project=project, max_file_size=max_file_size,
                        preview_codes=preview_codes)
