"""TL510-TL512 through the command line, and ``torchlint shapes``."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from click.testing import CliRunner
from fixture_support import FIXTURES, expected

from torchlint.cli import main

PROJECT = FIXTURES / "shapes_project"

MODEL = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.pool = nn.AdaptiveAvgPool2d(2)
            self.fc = nn.Linear(8 * 3 * 3, 10)

        def forward(self, x):
            x = self.pool(torch.relu(self.conv(x)))
            x = x.flatten(1)
            return self.fc(x)


    class Other(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

        def forward(self, x):
            return self.net(x.permute(1, 0))
    """)


def _write(tmp_path, text=MODEL):
    path = tmp_path / "model.py"
    path.write_text(text)
    return path


def test_check_reports_at_the_in_features_argument(tmp_path):
    path = _write(tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--select", "TL510,TL511,TL512",
                                       str(path)])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.startswith(str(path))]
    assert lines == [f"{path}:10:29: TL511 Linear(72 -> 10) receives 32 features from "
                     ".flatten(1) of 8x2x2 (after Conv2d(3 -> 8)); in_features=32 would make "
                     "the chain consistent"]


def test_default_tier_runs_the_rules(tmp_path):
    path = _write(tmp_path, "import torch.nn as nn\n"
                            "m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm1d(8))  # noqa: TL512\n"
                            "n = nn.Sequential(nn.Linear(3, 8), nn.Linear(4, 1))\n")
    result = CliRunner().invoke(main, ["check", "--no-cache", str(path)])
    assert "TL512" not in result.output
    assert f"{path}:3:46: TL510 Linear(4 -> 1) receives 8 features" in result.output


def test_shapes_prints_each_chain_with_sizes_and_stops(tmp_path):
    path = _write(tmp_path)
    result = CliRunner().invoke(main, ["shapes", str(path)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "class Net" in out and "class Other" in out
    assert "Conv2d(3 -> 8)" in out
    assert "TL511 Linear(72 -> 10) receives 32 features" in out
    assert "self.net (line 21): consistent (1 check)" in out
    assert "[stopped: a reshape (.permute)]" in out


def test_shapes_of_one_class(tmp_path):
    path = _write(tmp_path)
    result = CliRunner().invoke(main, ["shapes", f"{path}:Other"])
    assert result.exit_code == 0
    assert "class Other" in result.output and "class Net" not in result.output
    missing = CliRunner().invoke(main, ["shapes", f"{path}:Missing"])
    assert missing.output.strip() == "No size chain found in class Missing."


def test_shapes_of_an_unreadable_file(tmp_path):
    result = CliRunner().invoke(main, ["shapes", str(tmp_path / "absent.py")])
    assert result.exit_code == 2
    assert "cannot read" in result.output


def _reported(output: str, root) -> set[tuple[str, int]]:
    found = set()
    for line in output.splitlines():
        if ": TL51" in line:
            path, number = line.split(":")[:2]
            found.add((str(Path(path).resolve().relative_to(root)), int(number)))
    return found


def _marked(root, prefix: str = "TL51") -> set[tuple[str, int]]:
    return {(str(path.relative_to(root)), number) for path in sorted(root.rglob("*.py"))
            for number, code in expected(path.read_text()) if code.startswith(prefix)}


def test_sizes_from_other_files_of_the_project():
    result = CliRunner().invoke(main, ["check", "--no-cache", "--select", "TL510,TL511,TL512",
                                       str(PROJECT)])
    assert result.exit_code == 1, result.output
    assert _reported(result.output, PROJECT) == _marked(PROJECT)
    assert "Linear(64 -> 10) receives 128 features from Linear(16 -> 128)" in result.output


def test_a_cached_result_is_redone_when_the_file_building_the_class_changes(tmp_path):
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    cache = tmp_path / "cache"
    args = ["check", "--select", "TL510", "--cache-dir", str(cache), str(root)]
    first = CliRunner().invoke(main, args)
    assert _reported(first.output, root.resolve()) == _marked(root.resolve(), "TL510")
    train = root / "train.py"
    train.write_text(train.read_text().replace("BuiltTwice(32)", "BuiltTwice(64)"))
    second = CliRunner().invoke(main, args)
    nets = (root / "models" / "nets.py").read_text().splitlines()
    built_twice = nets.index("        self.fc2 = nn.Linear(64, 2)  # error: TL510") + 1
    assert ("models/nets.py", built_twice) in _reported(first.output, root.resolve())
    assert _reported(second.output, root.resolve()) == _marked(root.resolve(), "TL510") - {
        ("models/nets.py", built_twice)}
