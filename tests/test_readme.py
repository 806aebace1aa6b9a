"""README.md stays honest: its rule table is the registry's, its commands exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchlint.docs import (
    BEGIN,
    END,
    catalog_source,
    read_precision,
    read_recall,
    recall_results_for,
    results_for,
    rule_table,
)

README = Path(__file__).resolve().parent.parent / "README.md"


def test_rule_table_is_current() -> None:
    text = README.read_text(encoding="utf-8")
    table = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    measured = read_precision(results_for(README))
    hunted = read_recall(recall_results_for(README))
    assert table == rule_table(measured or None, hunted or None), (
        "run: python -m torchlint.docs README.md")


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


def test_precision_column_shows_what_the_default_run_shows(tmp_path: Path) -> None:
    results = tmp_path / "results.tsv"
    results.write_text("# measured on 2 repositories\n"
                       "code\tfindings\tjudged\ttrue\tfalse\tdebatable\tdefault_findings\t"
                       "default_judged\tdefault_true\n"
                       "TL801\t15\t15\t1\t14\t0\t1\t1\t1\n"
                       "TL301\t40\t25\t23\t1\t1\t40\t25\t23\n"
                       "TL605\t3\t3\t0\t3\t0\t0\t0\t0\n", encoding="utf-8")
    measured = read_precision(results)
    assert measured["TL801"] == (15, 15, 1, 1, 1, 1)
    row = {line.split(" | ")[0].strip("| "): line for line in rule_table(measured).splitlines()}
    assert "| 100 % (1/1); 7 % (1/15) with preview |" in row["TL801"]
    assert "| 92 % (23/25) |" in row["TL301"]  # the same findings either way: one figure
    assert "| no findings; 0 % (0/3) with preview |" in row["TL605"]


def test_recall_column_reads_the_harness_results(tmp_path: Path) -> None:
    results = tmp_path / "results.tsv"
    results.write_text("# measured on 2 repositories\n"
                       "code\ttier\tinstances\tdefault\tpreview_only\tmissed\n"
                       "TL301\tpreview (default)\t8\t0\t6\t2\n"
                       "TL501\tdefault\t4\t3\t0\t1\n"
                       "TL108\tabsent\t0\t0\t0\t0\n", encoding="utf-8")
    hunted = read_recall(results)
    assert hunted == {"TL301": (8, 0, 6), "TL501": (4, 3, 0), "TL108": (0, 0, 0)}
    table = rule_table({"TL501": (10, 10, 9)}, hunted).splitlines()
    assert "| Precision on real code | Recall on real code | What it flags |" in table[0]
    assert table[1].count("|") == table[0].count("|")
    row = {line.split(" | ")[0].strip("| "): line for line in table[2:]}
    assert "| 90 % (9/10) | 75 % (3/4) |" in row["TL501"]
    assert "| 0 % (0/8), 75 % (6) with preview |" in row["TL301"]
    assert "| no findings | not hunted |" in row["TL101"]
    zero = rule_table({}, {"TL101": (0, 0, 0)}).splitlines()
    assert "| no findings | no instances |" in next(r for r in zero if r.startswith("| TL101 "))
    assert "Recall" not in rule_table({"TL501": (10, 10, 9)}).splitlines()[0]


ROOT = README.parent


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def _between(marker: str) -> str:
    text = README.read_text(encoding="utf-8")
    part = text.split(f"<!-- {marker}:begin -->", 1)[1].split(f"<!-- {marker}:end -->", 1)[0]
    return re.search(r"```\w+\n(.*?)```", part, re.S).group(1)


def _torchlint(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torchlint", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_COLOR": "1"})


def test_quick_start_output_is_what_the_demo_prints() -> None:
    shown = next(b for b in _blocks("text") if b.startswith("$ torchlint check fixtures/demo"))
    lines = shown.splitlines()[1:]
    done = _torchlint("check", "--no-cache", "fixtures/demo")
    printed = done.stdout.splitlines() + done.stderr.splitlines()
    for line in lines:
        if line != "...":
            assert line in printed, line


def test_configuration_examples_are_valid(tmp_path: Path) -> None:
    from torchlint.config.loading import load_config

    blocks = [b for b in _blocks("toml") if "[tool.torchlint]" in b]
    assert len(blocks) >= 2
    for number, block in enumerate(blocks):
        folder = tmp_path / str(number)
        folder.mkdir()
        (folder / "pyproject.toml").write_text(block.replace('"../pyproject.toml"',
                                                             '"base.toml"'))
        (folder / "base.toml").write_text('select = ["TL"]\n')
        load_config(folder / "pyproject.toml")  # raises on an unknown key or bad value


def test_the_error_example_is_what_torchlint_prints(tmp_path: Path) -> None:
    shown = next(b for b in _blocks("text") if b.startswith("torchlint: error:"))
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\n\nselct = ["TL3"]\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    done = _torchlint("check", "--no-cache", "a.py", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.replace(str(tmp_path / "pyproject.toml"), "pyproject.toml") == shown


def test_the_statistics_pipeline_prints_what_the_readme_shows() -> None:
    block = next(b for b in _blocks("console") if "--statistics" in b)
    command, *expected = block.splitlines()
    # as written, with this environment's torchlint first on PATH
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "TORCHLINT_NO_CACHE": "1"}
    done = subprocess.run(command.removeprefix("$ "), shell=True, cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.splitlines() == expected


def test_the_workflow_uses_only_inputs_the_action_has() -> None:
    yaml = pytest.importorskip("yaml")
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    workflow = yaml.safe_load(next(b for b in _blocks("yaml") if "actions/checkout" in b))
    step = next(s for s in workflow["jobs"]["torchlint"]["steps"]
                if s["uses"].endswith("/torchlint@COMMIT"))
    assert set(step["with"]) <= set(action["inputs"])
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", README.read_text(), re.M))
    assert set(action["inputs"]) <= documented


def test_no_snippet_names_a_package_index_or_a_release_that_does_not_exist() -> None:
    text = README.read_text(encoding="utf-8")
    # a package name alone means PyPI, where torchlint is not published: paths and git URLs
    assert not re.search(r"pip install ['\"]?torchlint\b", text)
    assert "pypi.org" not in text and "rev: v" not in text
