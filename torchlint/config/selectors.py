"""Rule selectors: ``ALL``, a code, or a prefix (``TL``, ``TL3``, ``TL30``)."""

from __future__ import annotations

from collections.abc import Iterable

from torchlint.config.errors import ConfigError
from torchlint.registry import nearest_codes, rule_catalog


def expand_selectors(selectors: Iterable[str]) -> list[str]:
    """Codes named by selectors: ``ALL``, a code, or a prefix (``TL``, ``TL3``, ``TL30``)."""
    rules = rule_catalog()
    codes: list[str] = []
    for selector in selectors:
        upper = selector.strip().upper()
        if upper == "ALL":
            codes.extend(rules)
        else:
            codes.extend(code for code in rules if code.startswith(upper))
    return codes


def validate_selectors(selectors: Iterable[str], where: str) -> None:
    for selector in selectors:
        upper = selector.strip().upper()
        if upper == "ALL" or any(code.startswith(upper) for code in rule_catalog()) and upper:
            continue
        hint = nearest_codes(selector)
        suggestion = f" (did you mean {', '.join(hint)}?)" if hint else ""
        raise ConfigError(f"unknown rule code or prefix {selector!r} in {where}{suggestion}")
