"""The settings one file is linted with. Resolved per path by
:meth:`torchlint.config.settings.Settings.for_file` and passed runner -> engine -> fixer;
``FileContext`` gets its options. Nothing below the runner assumes one settings object
per run."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Protocol

from torchlint.analysis.options import Options
from torchlint.codes import SYNTAX_ERROR
from torchlint.engine.limits import DEFAULT_MAX_FILE_SIZE

if TYPE_CHECKING:
    from torchlint.analysis.project import Project
    from torchlint.rule import Rule


class SettingsSource(Protocol):
    """Anything that gives each file its settings: one configuration's
    :class:`~torchlint.config.settings.Settings`, or a run's
    :class:`~torchlint.config.workspace.Workspace` (the nearest configuration per file)."""

    def for_file(self, path: str) -> FileSettings: ...


@dataclass(frozen=True)
class FileSettings:
    # enabled codes, the engine's own TL001/TL002 included
    codes: frozenset[str]
    unfixable: frozenset[str] = frozenset()
    noqa: bool = True  # honour noqa comments
    options: Options = field(default_factory=Options)
    # the project's other files, which the file's analysis may learn from (None: the file
    # is analysed alone)
    project: Project | None = None
    # the rule classes to run; None: the registered rules of ``codes``
    rule_classes: tuple[type[Rule], ...] | None = None
    # preview rules the selection enables that do not run because preview is off: the
    # engine counts their findings (``--preview`` would show them), never reports them
    preview_codes: frozenset[str] = frozenset()
    # larger files are skipped with a warning (see torchlint.engine.limits); None: no limit
    max_file_size: int | None = DEFAULT_MAX_FILE_SIZE

    @classmethod
    def for_rules(cls, rules: Iterable[type[Rule]], codes: Collection[str] | None = None, *,
                  unfixable: Collection[str] = (), noqa: bool = True,
                  options: Options | None = None) -> FileSettings:
        """Settings running exactly ``rules``; ``codes`` (default: theirs and TL001) decide
        the engine's own TL001/TL002."""
        rules = tuple(rules)
        enabled = frozenset(codes) if codes is not None else frozenset(
            {r.code for r in rules} | {SYNTAX_ERROR})
        return cls(enabled, frozenset(unfixable), noqa, options or Options(),
                   rule_classes=rules)

    @cached_property
    def rules(self) -> tuple[type[Rule], ...]:
        if self.rule_classes is not None:
            return self.rule_classes
        return _registered_rules(self.codes)

    @cached_property
    def preview_rules(self) -> tuple[type[Rule], ...]:
        return _registered_rules(self.preview_codes) if self.preview_codes else ()

    @cached_property
    def fingerprint(self) -> str:
        """A digest of everything here that decides a lint result (for cache keys)."""
        parts = [
            ",".join(sorted(self.codes)), ",".join(sorted(self.unfixable)), str(self.noqa),
            self.options.fingerprint,
            ",".join(f"{r.__module__}.{r.__qualname__}" for r in self.rule_classes or ()),
            ",".join(sorted(self.preview_codes)),
        ]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()


@lru_cache(maxsize=64)
def _registered_rules(codes: frozenset[str]) -> tuple[type[Rule], ...]:
    from torchlint.registry import all_rules, rules_of

    # only the modules of ``codes`` when the catalogue knows them all (a one-file check
    # then imports just the rules that can fire on it)
    known = rules_of(codes)
    if known is not None:
        return known
    return tuple(rule for code, rule in all_rules().items() if code in codes)
