"""Finding rules: every module of ``torchlint.rules`` plus ``torchlint.rules`` entry points.

:func:`rule_catalog` answers "which codes exist, and which are on by default" without
importing any rule (and so without libcst) unless a plugin adds rules; :func:`all_rules`
imports them all.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from torchlint.rule import Rule

GROUP = "torchlint.rules"


def _rules_in(module: object) -> list[type[Rule]]:
    import inspect

    from torchlint.rule import Rule

    return [
        obj
        for _, obj in inspect.getmembers(module, inspect.isclass)
        if issubclass(obj, Rule) and obj is not Rule and getattr(obj, "code", None)
        and obj.__module__ == getattr(module, "__name__", None)
    ]


@lru_cache(maxsize=1)
def plugin_entry_points() -> tuple[EntryPoint, ...]:
    """Installed ``torchlint.rules`` entry points (rules from other packages)."""
    if not _may_declare_plugins():
        return ()
    from importlib.metadata import entry_points

    return tuple(entry_points(group=GROUP))


def _may_declare_plugins() -> bool:
    """False only when no metadata folder on ``sys.path`` mentions the entry point group.

    A quick look that spares importing importlib.metadata (a tenth of a cached run) when no
    plugin is installed; whenever it cannot tell (a zip on the path), it says True.
    """
    marker = GROUP.encode()
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as listing:
                folders = [e.name for e in listing if e.name.endswith((".dist-info", ".egg-info"))]
        except OSError:
            if os.path.isfile(entry):  # a zip archive: importlib.metadata can read it
                return True
            continue
        for folder in folders:
            try:
                with open(os.path.join(entry or ".", folder, "entry_points.txt"), "rb") as handle:
                    if marker in handle.read():
                        return True
            except OSError:
                continue
    return False


RULE_MODULE = re.compile(r"tl\d{3}_\w+")


def rule_module_names(path: Iterable[str], package: str) -> list[str]:
    """Qualified names of the rule modules (``tl301_create_then_move``) in the family
    packages under ``path``, sorted."""
    import pkgutil

    names = []
    for family in pkgutil.iter_modules(list(path)):
        if not family.ispkg:
            continue
        location = os.path.join(family.module_finder.path, family.name)  # type: ignore[union-attr]
        names += [f"{package}.{family.name}.{info.name}" for info in pkgutil.iter_modules([location])
                  if RULE_MODULE.fullmatch(info.name)]
    return sorted(names)


@lru_cache(maxsize=1)
def all_rules() -> dict[str, type[Rule]]:
    """Every known rule, keyed and sorted by code."""
    import importlib
    import inspect

    import torchlint.rules as package

    found: list[type[Rule]] = []
    for name in rule_module_names(package.__path__, package.__name__):
        found.extend(_rules_in(importlib.import_module(name)))
    for ep in plugin_entry_points():
        loaded = ep.load()
        found.extend(_rules_in(loaded) if inspect.ismodule(loaded) else [loaded])
    rules: dict[str, type[Rule]] = {}
    for rule in found:
        if rule.code in rules and rules[rule.code] is not rule:
            raise RuntimeError(f"two rules claim {rule.code}: {rules[rule.code]} and {rule}")
        rules[rule.code] = rule
    return dict(sorted(rules.items()))


def rules_of(codes: Iterable[str]) -> tuple[type[Rule], ...] | None:
    """The built-in rules of ``codes``, importing only their modules (the catalogue says
    which); None when plugins are installed or a code is not catalogued (ask
    :func:`all_rules`)."""
    if plugin_entry_points():
        return None
    import importlib

    from torchlint.catalog import MODULES

    found = []
    for code in sorted(codes):
        if code not in MODULES:
            return None
        module = importlib.import_module(MODULES[code])
        found += [rule for rule in _rules_in(module) if rule.code == code]
    return tuple(found)


class CatalogEntry(NamedTuple):
    name: str
    default: bool  # on unless deselected
    preview: bool  # runs only in preview mode


@lru_cache(maxsize=1)
def rule_catalog() -> dict[str, CatalogEntry]:
    """``code -> (name, on by default, preview)`` for every known rule, sorted by code."""
    if plugin_entry_points():
        return {code: CatalogEntry(rule.name, rule.default, rule.preview)
                for code, rule in all_rules().items()}
    from torchlint.catalog import BUILTIN

    return {code: CatalogEntry(*entry) for code, entry in BUILTIN.items()}


def nearest_codes(text: str, limit: int = 3) -> list[str]:
    """Known codes or names that look like ``text`` (for 'did you mean')."""
    import difflib

    catalog = rule_catalog()
    upper = text.upper()
    by_name = {entry.name: code for code, entry in catalog.items()}
    candidates = difflib.get_close_matches(upper, list(catalog), n=limit, cutoff=0.5)
    candidates += [by_name[n] for n in difflib.get_close_matches(text.lower(), list(by_name),
                                                                n=limit, cutoff=0.6)]
    if not candidates:
        candidates = [c for c in catalog if c.startswith(upper[:3])][:limit]
    seen: list[str] = []
    for c in candidates:
        if c not in seen:
            seen.append(c)
    return seen[:limit]


def find_rule(text: str) -> type[Rule] | None:
    """A rule by code (``TL301``, ``tl301``) or name (``create-then-move``)."""
    rules = all_rules()
    if text.upper() in rules:
        return rules[text.upper()]
    for rule in rules.values():
        if rule.name == text.lower():
            return rule
    return None
