"""The torch release a project targets: configured, given on the command line, or inferred
from its declared requirement; and the rules that depend on it."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchlint.analysis.torch_releases import CUDA_AMP_GRAD_SCALER, Releases, fix_available
from torchlint.cli import main
from torchlint.config.torch_target import declarations_in, declared_target

CODE = textwrap.dedent("""\
    import torch
    from torch.cuda.amp import GradScaler

    scaler = GradScaler()
    state = torch.load("checkpoint.pt", map_location="cpu")
""")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def check(cwd: Path, *args: str):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, ["check", "--no-cache", *args],
                                  env={"XDG_CONFIG_HOME": str(cwd / ".none")},
                                  catch_exceptions=False)
    finally:
        os.chdir(old)


def target_of(folder: Path) -> tuple[int, int] | None:
    return declared_target(declarations_in(str(folder), frozenset(os.listdir(folder))))[0]


@pytest.mark.parametrize(("name", "body", "expected"), [
    ("requirements.txt", "numpy\ntorch>=2.1,<3  # cuda\n", (2, 1)),
    ("requirements-dev.txt", "-r requirements.txt\ntorch==2.4.1+cu121\n", (2, 4)),
    ("requirements.txt", "torch~=1.13.0\n", (1, 13)),
    ("requirements.txt", "torch\n", None),
    ("requirements.txt", "torch<2\n", None),
    ("requirements.txt", "torchvision>=0.15\n", None),
    ("requirements/base.txt", "torch >=2.1.0, <2.9.0\n", (2, 1)),
    ("pyproject.toml", '[project]\nname = "x"\ndependencies = ["torch>=2.3"]\n', (2, 3)),
    ("pyproject.toml", '[project]\nname = "x"\n[project.optional-dependencies]\n'
     'gpu = ["torch==2.5.*"]\n', (2, 5)),
    ("pyproject.toml", '[tool.poetry.dependencies]\npython = "^3.10"\ntorch = "^2.2"\n', (2, 2)),
    ("pyproject.toml", '[tool.poetry.dependencies]\ntorch = { version = ">=1.12" }\n', (1, 12)),
    ("setup.cfg", "[options]\ninstall_requires =\n    numpy\n    torch>=1.13\n", (1, 13)),
    ("setup.py", '_deps = ["numpy", "torch>=2.6", "torchvision"]  # torch>=1.0 in a comment\n'
     'setup(name="x", extras_require={"torch": [d for d in _deps if "torch" in d]})\n', (2, 6)),
    ("setup.py", 'setup(name="x", install_requires=["torch"])\n', None),
    ("setup.py", 'setup(name="x", install_requires=["torch>=1.13"]\n', None),  # does not parse
    ("environment.yml", "dependencies:\n  - python=3.10\n  - pytorch::pytorch=2.0.1\n", (2, 0)),
    ("environment.yml", "dependencies:\n  - pip\n  - pip:\n      - torch>=2.4\n", (2, 4)),
    ("environment.yaml", "dependencies:\n  - pytorch 1.12.* cuda*\n", (1, 12)),
])
def test_declared_requirements_are_read(tmp_path: Path, name: str, body: str,
                                        expected: tuple[int, int] | None) -> None:
    write(tmp_path / name, body)
    assert target_of(tmp_path) == expected


def test_the_oldest_bound_among_a_folders_declarations_wins(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[project]\nname = "x"\ndependencies = ["torch>=2.1"]\n')
    write(tmp_path / "requirements-ci.txt", "torch==2.6.0\n")
    write(tmp_path / "requirements-dev.txt", "torch\n")  # unbounded: does not lower it
    assert target_of(tmp_path) == (2, 1)


def test_show_settings_says_where_the_target_came_from(tmp_path: Path) -> None:
    write(tmp_path / "requirements.txt", "torch>=2.2\n")
    write(tmp_path / "src" / "m.py", CODE)
    shown = check(tmp_path, "--show-settings", "src/m.py").stdout
    assert 'target-torch        = "2.2"   # inferred from requirements.txt: torch>=2.2' in shown
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\ntarget-torch = "2.6"\n')
    shown = check(tmp_path, "--show-settings", "src/m.py").stdout
    assert 'target-torch        = "2.6"   #' in shown and "pyproject.toml" in shown
    shown = check(tmp_path, "--show-settings", "--target-torch", "2.0", "src/m.py").stdout
    assert 'target-torch        = "2.0"   # command line' in shown
    assert check(tmp_path, "--target-torch", "two", "src").exit_code == 2


def test_a_nested_project_declaration_is_nearer_than_the_root(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\n')
    write(tmp_path / "requirements.txt", "torch==2.6.0\n")
    write(tmp_path / "legacy" / "requirements.txt", "torch==1.12.1\n")
    write(tmp_path / "legacy" / "m.py", CODE)
    write(tmp_path / "new" / "m.py", CODE)
    old = check(tmp_path, "--show-settings", "legacy/m.py").stdout
    assert '"1.12"   # inferred from legacy/requirements.txt' in old
    assert '"2.6"   # inferred from requirements.txt' in check(
        tmp_path, "--show-settings", "new/m.py").stdout


def _findings(cwd: Path, *args: str) -> list[str]:
    result = check(cwd, "--preview", "--select", "TL601,TL703", *args, "m.py")
    return [line.split(": ", 1)[1] for line in result.stdout.splitlines()]


@pytest.fixture
def pinned(tmp_path: Path):
    write(tmp_path / "m.py", CODE)

    def pin(requirement: str | None) -> list[str]:
        if requirement is None:
            (tmp_path / "requirements.txt").unlink(missing_ok=True)
        else:
            write(tmp_path / "requirements.txt", requirement + "\n")
        return _findings(tmp_path)
    return pin


def test_a_project_pinned_to_an_old_release(pinned) -> None:
    # 1.12: weights_only= does not exist yet and torch.cuda.amp is not deprecated
    assert pinned("torch==1.12.1") == []
    # 2.3: weights_only= exists and is not the default; torch.cuda.amp still fine
    found = pinned("torch==2.3.1")
    assert [f.split()[0] for f in found] == ["TL601"]
    assert "on torch 2.3 it unpickles the file" in found[0]


def test_a_project_pinned_to_a_new_release(pinned) -> None:
    # 2.6: weights_only=True is the default; torch.cuda.amp is deprecated, the fix is safe
    found = pinned("torch>=2.6")
    assert found == ['TL703 [*] torch.cuda.amp.GradScaler is deprecated; use '
                     'torch.amp.GradScaler("cuda", ...)']
    found = pinned("torch>=2.4,<2.6")
    assert sorted(f.split()[0] for f in found) == ["TL601", "TL703"]


def test_an_unknown_target_is_taken_for_a_current_torch(pinned) -> None:
    found = pinned(None)
    assert sorted(f.split()[0] for f in found) == ["TL601", "TL703"]
    # torch.amp.GradScaler needs 2.3: with no target known a current torch has it
    assert any(f.startswith("TL703 [*]") for f in found)
    assert any("before torch 2.6 it unpickles" in f for f in found)


def test_the_fix_never_emits_an_api_newer_than_the_target(tmp_path: Path) -> None:
    write(tmp_path / "m.py", CODE)
    result = check(tmp_path, "--diff", "--unsafe-fixes", "--target-torch", "1.12",
                   "--select", "TL601,TL703", "m.py")
    assert result.exit_code == 0 and result.stdout == ""  # nothing applies to 1.12
    result = check(tmp_path, "--diff", "--target-torch", "2.4", "--select", "TL703", "m.py")
    assert '+scaler = torch.amp.GradScaler("cuda")' in result.stdout
    assert fix_available(CUDA_AMP_GRAD_SCALER, (2, 2)) is False
    assert fix_available(CUDA_AMP_GRAD_SCALER, (2, 3)) is True
    assert fix_available(CUDA_AMP_GRAD_SCALER, None) is True


def test_releases_describe_and_include() -> None:
    span = Releases((1, 13), (2, 6), "why.")
    assert span.includes(None) and span.includes((2, 5)) and not span.includes((2, 6))
    assert not span.includes((1, 12))
    assert span.describe() == "torch 1.13 up to (not including) 2.6. why."
    assert Releases().describe() == "Every torch release."


def test_every_rule_documents_its_torch_releases() -> None:
    from torchlint.registry import all_rules

    for rule in all_rules().values():
        assert "## Torch releases" in rule.doc(), rule.code
