"""The flake8 plugin, through real flake8 in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("flake8")

SOURCE = (
    "import torch\n"
    "\n"
    "\n"
    "def build(device):\n"
    "    mask = torch.autograd.Variable(torch.ones(3))\n"
    "    steps = torch.autograd.Variable(torch.arange(4)).to(device)  # noqa: TL704\n"
    "    grid = torch.autograd.Variable(torch.zeros(2))  # noqa\n"
    "    fine = torch.zeros(2, device=device)  # noqa: TL704\n"
    "    return mask, steps, grid, fine\n"
)


def _run(cwd: Path, *args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args, "mod.py"],
                          cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout.splitlines()


def _check(cwd: Path, *args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "torchlint", "check", "--no-cache", "-q", *args,
                           "mod.py"], cwd=cwd, capture_output=True, text=True, timeout=120)
    # flake8 has no fixes: the same lines without check's "[*]" marks of fixable findings
    return [line.replace(" [*] ", " ", 1) for line in done.stdout.splitlines()]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "mod.py").write_text(SOURCE)
    return tmp_path


def test_same_lines_and_columns_as_check(project: Path) -> None:
    flake8 = _run(project, "--select", "TL")
    assert flake8 == _check(project)
    assert [line for line in flake8 if ": TL704 " in line] == ["mod.py:5:12: TL704 torch.autograd.Variable is deprecated; "
                      "tensors track gradients themselves"]


def test_plugin_is_on_by_default_and_noqa_works(project: Path) -> None:
    lines = _run(project)
    assert [line.split(": ", 1)[1][:5] for line in lines if ": TL704" in line] == ["TL704"]
    assert not any("TL704" in line for line in _run(project, "--ignore", "TL704"))


def test_opt_in_rules_only_when_selected(project: Path) -> None:
    assert not any("TL002" in line for line in _run(project, "--select", "TL"))
    selected = _run(project, "--select", "TL")
    extended = _run(project, "--extend-select", "TL002")
    assert [line for line in extended if "TL002" in line] == _check(
        project, "--extend-select", "TL002")[1:]
    assert any(line.startswith("mod.py:8:43: TL002") for line in extended)
    assert not any("TL002" in line for line in selected)
    assert any("TL002" in line for line in _run(project, "--select", "TL002,TL704"))


def test_disable_noqa_shows_suppressed_findings(project: Path) -> None:
    honoured = [line for line in _run(project, "--select", "TL") if ": TL704 " in line]
    disabled = [line for line in _run(project, "--select", "TL", "--disable-noqa")
                if ": TL704 " in line]
    assert len(honoured) == 1
    assert len(disabled) == 3  # both `# noqa` lines show up too


def test_files_the_configuration_excludes_yield_nothing(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchlint]\nextend-exclude = ["generated", "legacy_*.py"]\n')
    for name in ("mod.py", "generated/mod.py", "legacy_mod.py", "pkg/legacy_x.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(SOURCE)
    done = subprocess.run([sys.executable, "-m", "flake8", "--select", "TL", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert {line.split(":")[0] for line in done.stdout.splitlines()} == {"./mod.py"}
    # check skips the same files
    listed = subprocess.run([sys.executable, "-m", "torchlint", "check", "--show-files", "."],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert [Path(p).name for p in listed.stdout.split()] == ["mod.py"]
    # `exclude` (which replaces the default exclusions) too
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nexclude = ["mod.py"]\n')
    done = subprocess.run([sys.executable, "-m", "flake8", "--select", "TL", "mod.py",
                           "legacy_mod.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert {line.split(":")[0] for line in done.stdout.splitlines()} == {"legacy_mod.py"}
