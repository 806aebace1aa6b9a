"""The flake8 plugin: torchlint's findings through flake8 (codes ``TL``).

Each file is linted with the settings of its nearest torchlint configuration, as
``torchlint check`` lints it (its selection, per-file ignores, target torch release and
rule options), so both report the same findings. On top, an opt-in rule runs when flake8's ``--select`` or ``--extend-select`` names it
(``TL002``) or a prefix narrower than the plugin's own ``TL`` (``TL0``), so the ``TL`` that
flake8 users put in ``select`` to turn the plugin on keeps the opt-in rules off. flake8
then decides which codes it shows (``--select``, ``--ignore``, ``# noqa``). A file that the
configuration's ``exclude`` or ``extend-exclude`` names yields nothing (torchlint's default
exclusions are left to flake8's own ``--exclude``).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from torchlint import __version__
from torchlint.codes import SYNTAX_ERROR
from torchlint.config.errors import ConfigError
from torchlint.config.workspace import Workspace
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
    """The default rules plus the opt-in rules that flake8 was told to select."""
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
    _workspaces: ClassVar[dict[str, Workspace]] = {}  # one per working directory

    def __init__(self, tree: ast.AST, filename: str, lines: Sequence[str]) -> None:
        self.filename = filename
        self.lines = lines

    @classmethod
    def parse_options(cls, options: Any) -> None:
        cls.codes = enabled_codes(getattr(options, "select", None),
                                  getattr(options, "extend_select", None))
        cls.honour_noqa = not getattr(options, "disable_noqa", False)

    @classmethod
    def _workspace(cls) -> Workspace:
        key = os.getcwd()
        if key not in cls._workspaces:
            cls._workspaces[key] = Workspace()
        return cls._workspaces[key]

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        codes = self.codes if self.codes is not None else enabled_codes(None, None)
        opt_in = {code for code in codes if not all_rules()[code].default}
        workspace = self._workspace()
        try:
            if workspace.settings_for(self.filename).is_excluded(self.filename, explicit=True):
                return  # the configuration's exclude / extend-exclude, as check applies them
            configured = workspace.for_file(self.filename)
        except ConfigError as exc:  # said once per file, never a crash of flake8
            yield 1, 0, f"{SYNTAX_ERROR} torchlint configuration: {exc}", type(self)
            return
        settings = replace(configured, codes=configured.codes | opt_in, noqa=self.honour_noqa,
                           rule_classes=None)
        source = SourceFile(path=self.filename, text="".join(self.lines))
        for d in lint_one(source, settings, Mode()).diagnostics:
            # flake8 prints the column it is given plus one; ours are 1-based already
            yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
