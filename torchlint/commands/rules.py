"""``torchlint rules`` (every rule, one a line when piped) and ``torchlint explain``
(a rule's documentation, or the list of a family given by its prefix)."""

from __future__ import annotations

import json
import os
import sys

import click

from torchlint.commands.report import EXIT_ERROR, error, plural
from torchlint.registry import all_rules, find_rule, nearest_codes


def fix_label(rule: type) -> str:
    return {"safe": "safe", "unsafe": "unsafe", "sometimes": "safe/unsafe",
            "none": "-"}[rule.fix_safety]  # type: ignore[attr-defined]


def _terminal_width() -> int:
    try:
        return os.get_terminal_size().columns
    except OSError:
        return 120


def list_rules(fmt: str | None) -> None:
    from torchlint.docs import tier as rule_tier

    rules = all_rules()
    if fmt is None:
        fmt = "table" if sys.stdout.isatty() else "text"
    if fmt == "json":
        payload = [{"code": code, "name": rule.name, "default": rule.default,
                    "preview": rule.preview, "fix": rule.fix_safety, "summary": rule.summary()}
                   for code, rule in rules.items()]
        click.echo(json.dumps(payload, indent=2))
        return
    if fmt == "text":  # one line a rule, tab-separated: for grep, cut and awk
        for code, rule in rules.items():
            click.echo("\t".join((code, rule.name, rule_tier(rule), fix_label(rule),
                                  " ".join(rule.summary().split()))))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(show_lines=False, header_style="bold")
    for column in ("Code", "Name", "Enabled", "Fix", "Summary"):
        table.add_column(column, overflow="fold")
    for code, rule in rules.items():
        # Text, never markup: a summary's [brackets] are printed as written
        table.add_row(*(Text(cell) for cell in (code, rule.name, rule_tier(rule),
                                                fix_label(rule), rule.summary())))
    Console(width=max(120, _terminal_width())).print(table)


def explain_rule(code: str) -> int:
    rule = find_rule(code)
    if rule is None:
        family = [r for c, r in all_rules().items() if c.startswith(code.strip().upper())]
        if family and code.strip():
            click.echo(f"{plural(len(family), 'rule')} start{'s' if len(family) == 1 else ''} with "
                       f"{code.strip().upper()}:")
            for member in family:
                click.echo(f"  {member.code}  {member.name}  {' '.join(member.summary().split())}")
            click.echo("Run `torchlint explain CODE` for one of them.")
            return 0
        hint = nearest_codes(code)
        suggestion = f"; did you mean {', '.join(hint)}?" if hint else ""
        error(f"unknown rule {code!r}{suggestion}")
        return EXIT_ERROR
    default = "on by default" if rule.default else "opt-in (enable with --select " + rule.code + ")"
    if rule.preview:
        default = "preview: runs only with --preview; " + (
            "on by default once stable" if rule.default else default)
    header = f"# {rule.code} {rule.name}\n\n*{default}; fix: {fix_label(rule)}*\n\n"
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.markdown import Markdown  # only `explain` on a terminal needs it

        Console().print(Markdown(header + rule.doc()))
    else:
        click.echo(header + rule.doc())
    return 0
