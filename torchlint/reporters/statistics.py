"""``--statistics``: how many findings per rule, and whether ``--fix`` can fix them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from torchlint.diagnostic import Diagnostic


@dataclass
class RuleCount:
    code: str
    name: str
    count: int = 0
    safe: int = 0  # fixable with --fix
    unsafe: int = 0  # fixable with --fix --unsafe-fixes

    @property
    def marker(self) -> str:
        if self.safe == self.count:
            return "[*]"  # every one fixable with --fix
        if self.safe + self.unsafe:
            return "[-]"  # some, or only with --unsafe-fixes
        return "[ ]"


def count_by_rule(diagnostics: Sequence[Diagnostic]) -> list[RuleCount]:
    counts: dict[str, RuleCount] = {}
    for d in diagnostics:
        entry = counts.setdefault(d.code, RuleCount(d.code, d.name))
        entry.count += 1
        if d.fix is not None:
            if d.fix.is_safe:
                entry.safe += 1
            else:
                entry.unsafe += 1
    return sorted(counts.values(), key=lambda c: (-c.count, c.code))


def render_statistics(diagnostics: Sequence[Diagnostic], stream: TextIO,
                      as_json: bool = False) -> None:
    counts = count_by_rule(diagnostics)
    if as_json:
        json.dump([{"code": c.code, "name": c.name, "count": c.count,
                    "fixable": c.safe, "unsafe_fixable": c.unsafe} for c in counts],
                  stream, indent=2)
        stream.write("\n")
        return
    if not counts:
        return
    width = max(len(str(c.count)) for c in counts)
    code_width = max(len(c.code) for c in counts)
    for c in counts:  # data rows only: the legend is in the summary on stderr
        stream.write(f"{c.count:>{width}}\t{c.code:<{code_width}}\t{c.marker} {c.name}\n")


LEGEND = ("[*] fixable with --fix; [-] some fixable, or only with --fix --unsafe-fixes; "
          "[ ] no fix")
FORMATS = ("concise", "json")  # what --statistics can print
