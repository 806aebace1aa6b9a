"""The pre-commit hooks, run by real pre-commit (``try-repo`` against this repository)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

REPO = Path(os.environ.get("TORCHLINT_HOOKS_REPO") or Path(__file__).resolve().parents[1])
PRE_COMMIT = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")

pytestmark = pytest.mark.skipif(
    not Path(PRE_COMMIT).exists() or shutil.which("git") is None,
    reason="pre-commit and git are needed")

BAD = "import torch\n\nmask = torch.autograd.Variable(torch.ones(3))\n"
LOAD = 'import torch\n\nstate = torch.load("a.pt")\n'
NOTEBOOK = ('{"cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, '
            '"outputs": [], "source": ["import torch\\n", "x = torch.autograd.Variable(torch.zeros(2))"]}], '
            '"metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n')


def test_hook_definitions() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"torchlint", "torchlint-fix"}
    # --force-exclude: the files pre-commit names still meet the configured exclusions
    assert hooks["torchlint"]["entry"] == "torchlint check --force-exclude"
    assert hooks["torchlint-fix"]["entry"] == "torchlint check --fix --force-exclude"
    for hook in hooks.values():
        assert hook["types_or"] == ["python", "pyi", "jupyter"]
        assert hook["require_serial"] is True
        assert hook["language"] == "python"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _try_repo(project: Path) -> subprocess.CompletedProcess[str]:
    # try-repo installs the hooks' environment into a fresh store each time: one run, both hooks
    env = dict(os.environ, PRE_COMMIT_COLOR="never")
    env.pop("CI", None)
    return subprocess.run([PRE_COMMIT, "try-repo", str(REPO), "--all-files", "--verbose"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=900)


def test_try_repo_check_then_fix(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    (project / "train.py").write_text(BAD)
    (project / "explore.ipynb").write_text(NOTEBOOK)
    (project / "notes.txt").write_text("torch.autograd.Variable(torch.ones(3))\n")
    # nested configurations: each file gets its nearest one, whatever order pre-commit uses
    (project / "pyproject.toml").write_text(
        '[tool.torchlint]\npreview = true\nignore = ["TL602"]\nextend-exclude = ["vendored"]\n')
    for folder, ignored in (("scripts", "TL601"), ("src", None)):
        (project / folder).mkdir()
        (project / folder / "load.py").write_text(LOAD)
        if ignored:
            (project / folder / "pyproject.toml").write_text(
                f'[tool.torchlint]\npreview = true\nignore = ["{ignored}"]\n')
    (project / "vendored").mkdir()
    (project / "vendored" / "lib.py").write_text(BAD)  # tracked, but excluded
    _git(project, "add", ".")

    result = _try_repo(project)
    output = result.stdout + result.stderr
    if "Could not find a version" in output or "No matching distribution" in output:
        pytest.skip("the hook environment could not be installed (no package index)")
    assert result.returncode == 1, output
    # the config try-repo writes lists the hooks in manifest order: check, then fix
    check_part, _, fix_part = output.partition("torchlint (fix)")
    assert fix_part, output
    assert "train.py:3:8: TL704" in check_part
    assert "explore.ipynb:cell 1:2:5: TL704" in check_part
    assert "notes.txt" not in output
    assert "src/load.py:3:9: TL601" in check_part and "src/load.py:3:9: TL602" not in check_part
    assert "scripts/load.py:3:9: TL602" in check_part and "scripts/load.py:3:9: TL601" not in output
    assert "vendored" not in output and (project / "vendored" / "lib.py").read_text() == BAD
    assert "files were modified by this hook" in fix_part
    assert (project / "train.py").read_text() == (
        "import torch\n\nmask = torch.ones(3)\n")
    notebook = (project / "explore.ipynb").read_text()
    assert '"x = torch.zeros(2)"' in notebook
    assert notebook.replace('"x = torch.zeros(2)"',
                            '"x = torch.autograd.Variable(torch.zeros(2))"') == NOTEBOOK


def test_the_readme_snippet_installs_the_hook_from_the_clone(tmp_path: Path) -> None:
    """The README's pre-commit snippet, run as written in the clone (only PROJECT set)."""
    import re

    text = (REPO / "README.md").read_text(encoding="utf-8")
    part = text.split("<!-- pre-commit:begin -->", 1)[1].split("<!-- pre-commit:end -->", 1)[0]
    snippet = re.search(r"```bash\n(.*?)```", part, re.S).group(1)
    project = tmp_path / "my-project"
    project.mkdir()
    _git(project, "init", "-q")
    (project / "train.py").write_text(BAD)
    _git(project, "add", ".")
    assert snippet.startswith("PROJECT=")
    script = f"PROJECT={project}\n" + snippet.split("\n", 1)[1]
    env = dict(os.environ, PRE_COMMIT_COLOR="never",
               PATH=f"{Path(PRE_COMMIT).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("CI", None)
    # the clone must have a commit: a checkout from git has one; a bare copy gets one
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True)
    if head.returncode != 0:
        pytest.skip("the repository has no commit to point pre-commit at")
    done = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=900)
    output = done.stdout + done.stderr
    if "Could not find a version" in output or "No matching distribution" in output:
        pytest.skip("the hook environment could not be installed (no package index)")
    config = (project / ".pre-commit-config.yaml").read_text()
    assert f"repo: {REPO}" in config and re.search(r"rev: [0-9a-f]{40}\n", config)
    assert "torchlint (fix)" in output and "files were modified by this hook" in output
    assert done.returncode == 1  # the hook changed a file: the commit would stop for review
    assert (project / "train.py").read_text() == (
        "import torch\n\nmask = torch.ones(3)\n")
    assert (project / ".git" / "hooks" / "pre-commit").exists()
