"""Finding rules: every module of ``torchlint.rules`` plus ``torchlint.rules`` entry points."""

from __future__ import annotations

import difflib
import importlib
import inspect
import pkgutil
from functools import lru_cache
from importlib.metadata import entry_points

from torchlint.rule import Rule


def _rules_in(module: object) -> list[type[Rule]]:
    return [
        obj
        for _, obj in inspect.getmembers(module, inspect.isclass)
        if issubclass(obj, Rule) and obj is not Rule and getattr(obj, "code", None)
        and obj.__module__ == getattr(module, "__name__", None)
    ]


@lru_cache(maxsize=1)
def all_rules() -> dict[str, type[Rule]]:
    """Every known rule, keyed and sorted by code."""
    import torchlint.rules as package

    found: list[type[Rule]] = []
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        found.extend(_rules_in(importlib.import_module(info.name)))
    for ep in entry_points(group="torchlint.rules"):
        loaded = ep.load()
        found.extend(_rules_in(loaded) if inspect.ismodule(loaded) else [loaded])
    rules: dict[str, type[Rule]] = {}
    for rule in found:
        if rule.code in rules and rules[rule.code] is not rule:
            raise RuntimeError(f"two rules claim {rule.code}: {rules[rule.code]} and {rule}")
        rules[rule.code] = rule
    return dict(sorted(rules.items()))


def nearest_codes(text: str, limit: int = 3) -> list[str]:
    """Known codes or names that look like ``text`` (for 'did you mean')."""
    rules = all_rules()
    upper = text.upper()
    by_name = {r.name: code for code, r in rules.items()}
    candidates = difflib.get_close_matches(upper, list(rules), n=limit, cutoff=0.5)
    candidates += [by_name[n] for n in difflib.get_close_matches(text.lower(), list(by_name),
                                                                n=limit, cutoff=0.6)]
    if not candidates:
        candidates = [c for c in rules if c.startswith(upper[:3])][:limit]
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
