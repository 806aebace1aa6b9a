"""README.md stays honest: its rule table is the registry's, its commands exist."""

from __future__ import annotations

import re
from pathlib import Path

from torchlint.docs import BEGIN, END, catalog_source, rule_table

README = Path(__file__).resolve().parent.parent / "README.md"


def test_rule_table_is_current() -> None:
    text = README.read_text(encoding="utf-8")
    table = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert table == rule_table(), "run: python -m torchlint.docs README.md"


def test_catalog_is_current() -> None:
    """torchlint/catalog.py (codes, names, defaults without importing rules) is generated."""
    catalog = Path(__file__).resolve().parent.parent / "torchlint" / "catalog.py"
    assert catalog.read_text(encoding="utf-8") == catalog_source(), (
        "run: python -m torchlint.docs README.md")


def test_readme_names_every_check_option() -> None:
    from click.testing import CliRunner

    from torchlint.cli import main

    help_text = CliRunner().invoke(main, ["check", "--help"]).output
    options = set(re.findall(r"(--[a-z][a-z-]+)", help_text)) - {"--help"}
    text = README.read_text(encoding="utf-8")
    missing = sorted(o for o in options if o not in text)
    assert not missing, f"README lacks {missing}"
