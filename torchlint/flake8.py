"""The flake8 plugin: torchlint's findings through flake8 (codes ``TL``).

flake8 decides which codes it shows (``--select``, ``--extend-select``, ``--ignore``,
``# noqa``); this adapter decides which rules run. The default rules always run; an
opt-in rule runs only when ``--select`` or ``--extend-select`` names it (``TL002``) or a
prefix narrower than the plugin's own ``TL`` (``TL0``), so the ``TL`` that flake8 users put
in ``select`` to turn the plugin on keeps the opt-in rules off, as in ``torchlint check``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from torchlint import __version__
from torchlint.config.settings import Settings
from torchlint.registry import all_rules
from torchlint.run.file import lint_one
from torchlint.run.outcome import Mode
from torchlint.source import SourceFile

PLUGIN_PREFIX = "TL"


def _selectors(values: Sequence[str] | None) -> list[str]:
    out: list[str] = []
    for value in values or ():
        out.extend(part.strip().upper() for part in str(value).split(",") if part.strip())
    return out


def enabled_codes(select: Sequence[str] | None, extend_select: Sequence[str] | None
                  ) -> tuple[str, ...]:
    """The rules to run: the defaults, plus opt-in rules that flake8 was told to select."""
    chosen = [s for s in (*_selectors(select), *_selectors(extend_select))
              if s.startswith(PLUGIN_PREFIX) and s != PLUGIN_PREFIX]
    codes = [code for code, rule in all_rules().items()
             if rule.default or any(code.startswith(s) for s in chosen)]
    return tuple(codes)


class TorchlintChecker:
    name = "torchlint"
    version = __version__
    codes: ClassVar[tuple[str, ...] | None] = None  # set by parse_options
    honour_noqa: ClassVar[bool] = True  # False with flake8 --disable-noqa

    def __init__(self, tree: ast.AST, filename: str, lines: Sequence[str]) -> None:
        self.filename = filename
        self.lines = lines

    @classmethod
    def parse_options(cls, options: Any) -> None:
        cls.codes = enabled_codes(getattr(options, "select", None),
                                  getattr(options, "extend_select", None))
        cls.honour_noqa = not getattr(options, "disable_noqa", False)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        codes = self.codes if self.codes is not None else enabled_codes(None, None)
        settings = Settings(select=codes, noqa=self.honour_noqa).for_file(self.filename)
        source = SourceFile(path=self.filename, text="".join(self.lines))
        for d in lint_one(source, settings, Mode()).diagnostics:
            # flake8 prints the column it is given plus one; ours are 1-based already
            yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
