"""Fixes that meet: two rules' fixes on neighbouring lines never leave a statement twice,
and the summary after --fix --unsafe-fixes adds up against the run before it."""

from __future__ import annotations

import os
import re
import shutil
import textwrap
from pathlib import Path

from click.testing import CliRunner

from torchlint.cli import main

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"


def check(cwd: Path, *args: str):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, ["check", "--no-cache", "--isolated", *args],
                                  catch_exceptions=False)
    finally:
        os.chdir(old)


def test_discarded_move_and_variable_fixes_leave_one_move(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import torch
        from torch.autograd import Variable


        def train(model, loader, device):
            for images, labels in loader:
                images.to(device)
                labels = labels.to(device)
                images = Variable(images.to(device))
                model(images, labels)
    """))
    result = check(tmp_path, "--fix", "train.py")
    assert result.exit_code == 0, result.output
    fixed = (tmp_path / "train.py").read_text()
    assert fixed.count("images = images.to(device)") == 1
    assert "images.to(device)\n" not in fixed.replace("images = images.to(device)\n", "")
    assert "Variable" not in fixed
    assert check(tmp_path, "train.py").exit_code == 0  # nothing left, nothing new


def test_fix_summary_adds_up_against_the_run_before(tmp_path: Path) -> None:
    project = tmp_path / "demo"
    shutil.copytree(DEMO, project)
    before = check(project, ".")
    first = int(re.search(r"Found (\d+) errors?\.", before.stderr).group(1))
    fixed = check(project, "--fix", "--unsafe-fixes", "--show-fixes", ".")
    match = re.search(r"Found (\d+) errors \((\d+) fixed, (\d+) remaining\)(.*)", fixed.stderr)
    assert match, fixed.stderr
    total, count, remaining, rest = (int(match.group(1)), int(match.group(2)),
                                     int(match.group(3)), match.group(4))
    assert count + remaining == total
    if total != first:  # the fixes revealed findings: the summary says how many
        assert f"{first} before fixing, and {total - first} more that the fixes uncovered" in rest
    after = check(project, ".")
    assert f"Found {remaining} error" in after.stderr  # what remains is what a new run finds
    listed = sum(int(n) for n in re.findall(r"^\s+(\d+) × TL\d+", fixed.stderr, re.M))
    assert listed == count  # --show-fixes lists every fix
