"""Which files a run touches: .gitignore and the other ignore files, exclusions from the
configuration and the command line, force-exclude for explicit paths and stdin."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchlint.cli import main

BAD = "import torch\n\nx = torch.autograd.Variable(torch.ones(3))\n"
FIXED = "import torch\n\nx = torch.ones(3)\n"


def write(path: Path, text: str = BAD) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def check(cwd: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None):
    old = os.getcwd()
    os.chdir(cwd)
    environment = {"XDG_CONFIG_HOME": str(cwd / ".no-user-config"),
                   "GIT_CONFIG_GLOBAL": str(cwd / ".no-gitconfig"), **(env or {})}
    try:
        return CliRunner().invoke(main, ["check", "--no-cache", *args], input=stdin,
                                  env=environment, catch_exceptions=False)
    finally:
        os.chdir(old)


def files(cwd: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    result = check(cwd, "--show-files", *args, env=env)
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is needed")


@pytest.fixture
def ml_repo(tmp_path: Path) -> Path:
    """A repository whose wandb/ run copies and experiments/ are gitignored."""
    (tmp_path / ".git").mkdir()  # a repository (its ignore files apply up to here)
    write(tmp_path / ".gitignore", "wandb/\n/experiments/\n*_generated.py\n!keep_generated.py\n")
    write(tmp_path / "train.py")
    write(tmp_path / "wandb" / "run-20240101" / "files" / "code" / "train.py")
    write(tmp_path / "experiments" / "sweep.py")
    write(tmp_path / "src" / "experiments" / "kept.py")  # /experiments is rooted: not this
    write(tmp_path / "src" / "model_generated.py")
    write(tmp_path / "src" / "keep_generated.py")
    write(tmp_path / "src" / "data" / ".gitignore", "cache/\n")
    write(tmp_path / "src" / "data" / "cache" / "x.py")
    write(tmp_path / "src" / "data" / "load.py")
    return tmp_path


def test_gitignored_folders_and_files_are_skipped(ml_repo: Path) -> None:
    assert files(ml_repo) == ["src/data/load.py", "src/experiments/kept.py",
                              "src/keep_generated.py", "train.py"]


def test_fix_never_touches_an_ignored_file(ml_repo: Path) -> None:
    copy = ml_repo / "wandb" / "run-20240101" / "files" / "code" / "train.py"
    result = check(ml_repo, "--fix", ".")
    assert result.exit_code == 0, result.output
    assert (ml_repo / "train.py").read_text() == FIXED
    assert copy.read_text() == BAD
    assert (ml_repo / "experiments" / "sweep.py").read_text() == BAD


def test_respect_gitignore_false_and_the_option(ml_repo: Path) -> None:
    everything = files(ml_repo, "--no-respect-gitignore")
    assert "wandb/run-20240101/files/code/train.py" in everything
    assert "experiments/sweep.py" in everything
    write(ml_repo / "pyproject.toml", "[tool.torchlint]\nrespect-gitignore = false\n")
    assert files(ml_repo) == everything
    assert "wandb" not in " ".join(files(ml_repo, "--respect-gitignore"))


def test_a_folder_named_explicitly_is_entered_even_if_ignored(ml_repo: Path) -> None:
    # as in Ruff: what the user names is what the user wants
    assert files(ml_repo, "experiments") == ["experiments/sweep.py"]
    assert files(ml_repo, "experiments/sweep.py") == ["experiments/sweep.py"]


def test_ignore_files_outside_a_repository_still_apply(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", "runs/\n")
    write(tmp_path / "runs" / "copy.py")
    write(tmp_path / "main.py")
    assert files(tmp_path) == ["main.py"]
    assert files(tmp_path / "runs" / "..") == ["main.py"]


def test_dot_ignore_wins_over_gitignore_in_the_same_folder(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".gitignore", "scratch/\n")
    write(tmp_path / ".ignore", "!scratch/\n")
    write(tmp_path / "scratch" / "try.py")
    assert files(tmp_path) == ["scratch/try.py"]


@needs_git
def test_info_exclude_and_the_global_excludes_file(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path / ".git" / "info" / "exclude", "local_only/\n")
    write(tmp_path / "global-ignore", "outputs/\n")
    gitconfig = write(tmp_path / "gitconfig",
                      f"[core]\n\texcludesFile = {tmp_path / 'global-ignore'}\n")
    write(tmp_path / "local_only" / "a.py")
    write(tmp_path / "outputs" / "b.py")
    write(tmp_path / "main.py")
    env = {"GIT_CONFIG_GLOBAL": str(gitconfig)}
    assert files(tmp_path, env=env) == ["main.py"]
    # without a configured file, git's default location: $XDG_CONFIG_HOME/git/ignore
    write(tmp_path / "xdg" / "git" / "ignore", "outputs/\n")
    default = {"GIT_CONFIG_GLOBAL": str(tmp_path / "none"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert files(tmp_path, env=default) == ["main.py"]
    assert files(tmp_path, env={"GIT_CONFIG_GLOBAL": str(tmp_path / "none")}) == [
        "main.py", "outputs/b.py"]


def test_exclude_options_on_the_command_line(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\nextend-exclude = ["legacy"]\n')
    for name in ("legacy/a.py", "build/b.py", "gen/c.py", "src/d.py"):
        write(tmp_path / name)
    assert files(tmp_path) == ["gen/c.py", "src/d.py"]
    assert files(tmp_path, "--extend-exclude", "gen") == ["src/d.py"]
    # --exclude replaces the configuration's exclude and the defaults (extend-exclude stays)
    assert files(tmp_path, "--exclude", "src,gen") == ["build/b.py"]
    assert check(tmp_path, "--exclude", "").exit_code == 2


def test_force_exclude_applies_to_explicit_paths_and_stdin(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\nextend-exclude = ["vendored"]\n')
    vendored = write(tmp_path / "vendored" / "lib.py")
    # named explicitly: linted, as in Ruff
    assert files(tmp_path, "vendored/lib.py") == ["vendored/lib.py"]
    assert files(tmp_path, "--force-exclude", "vendored/lib.py", "vendored") == []
    result = check(tmp_path, "--force-exclude", "--fix", "vendored/lib.py")
    assert result.exit_code == 0 and vendored.read_text() == BAD
    piped = check(tmp_path, "--force-exclude", "--fix", "--stdin-filename", "vendored/new.py",
                  stdin=BAD)
    assert piped.exit_code == 0 and piped.stdout == BAD
    assert "excluded" in piped.stderr
    write(tmp_path / "pyproject.toml",
          '[tool.torchlint]\nextend-exclude = ["vendored"]\nforce-exclude = true\n')
    assert files(tmp_path, "vendored/lib.py") == []
    assert files(tmp_path, "--no-force-exclude", "vendored/lib.py") == ["vendored/lib.py"]
