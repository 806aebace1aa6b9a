"""README.md stays honest: its rule table is the registry's, its commands exist."""

from __future__ import annotations

import re
from pathlib import Path

from torchlint.docs import BEGIN, END, catalog_source, read_precision, results_for, rule_table

README = Path(__file__).resolve().parent.parent / "README.md"


def test_rule_table_is_current() -> None:
    text = README.read_text(encoding="utf-8")
    table = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    measured = read_precision(results_for(README))
    assert table == rule_table(measured or None), "run: python -m torchlint.docs README.md"


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


def test_precision_column_reads_the_harness_results(tmp_path: Path) -> None:
    results = tmp_path / "results.tsv"
    results.write_text("# measured on 2 repositories\n"
                       "code\tfindings\tjudged\ttrue\tfalse\tdebatable\n"
                       "TL301\t40\t25\t23\t1\t1\nTL704\t7\t0\t0\t0\t0\n", encoding="utf-8")
    measured = read_precision(results)
    assert measured == {"TL301": (40, 25, 23), "TL704": (7, 0, 0)}
    table = rule_table(measured).splitlines()
    assert "| Precision on real code |" in table[0]
    row = {line.split(" | ")[0].strip("| "): line for line in table[2:]}
    assert "| 92 % (23/25) |" in row["TL301"]
    assert "| 7 unjudged |" in row["TL704"]
    assert "| no findings |" in row["TL101"]
