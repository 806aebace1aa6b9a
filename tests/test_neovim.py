"""A real editor end to end: headless Neovim (the pinned release the test extra installs)
with the README's configuration, on a real buffer: diagnostics, a quick fix, fix-all.

Skipped where Neovim is not installed (the test extra installs it on Linux x86_64 and
macOS arm64, where its wheels exist)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DRIVER = Path(__file__).resolve().parent / "nvim" / "driver.lua"
SAMPLE = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 4) for _ in range(2)]


x = torch.autograd.Variable(torch.ones(3))
"""


def readme_neovim_config() -> str:
    """The Lua configuration the README gives for Neovim."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Neovim", 1)[1].split("\n### ", 1)[0]
    match = re.search(r"```lua\n(.*?)```", section, re.S)
    assert match is not None, "the README has no Lua configuration for Neovim"
    return match.group(1)


def _nvim() -> str | None:
    beside = Path(sys.executable).parent / "nvim"
    return str(beside) if beside.exists() else shutil.which("nvim")


@pytest.mark.skipif(_nvim() is None, reason="Neovim is not installed")
def test_neovim_with_the_readme_configuration(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nselect = ["TL101", "TL704"]\n')
    (tmp_path / "train.py").write_text(SAMPLE)
    (tmp_path / "config.lua").write_text(readme_neovim_config())
    env = dict(os.environ, TORCHLINT_README_LUA=str(tmp_path / "config.lua"),
               XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    # the README's command is `torchlint server`: the one installed beside this Python,
    # running this checkout's code
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    nvim = _nvim()
    assert nvim is not None
    done = subprocess.run([nvim, "--headless", "--clean", "-u", str(DRIVER), "train.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    lines = done.stdout.splitlines()
    assert [line for line in lines if line.startswith("DIAGNOSTIC")] == [
        "DIAGNOSTIC 8 9 TL101 torchlint 2",
        "DIAGNOSTIC 11 5 TL704 torchlint 2",
    ], output
    assert "QUICKFIX         self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])" \
        in lines
    fixed = [line[len("LINE "):] for line in lines if line.startswith("LINE")]
    assert "\n".join(fixed) + "\n" == SAMPLE.replace(
        "[nn.Linear(4, 4) for _ in range(2)]",
        "nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])").replace(
        "torch.autograd.Variable(torch.ones(3))", "torch.ones(3)")
    assert lines[-1] == "CLEAN"
    assert (tmp_path / "train.py").read_text() == SAMPLE  # the buffer, never the file
