"""Jupyter notebooks: linted as one program per notebook, fixed cell by cell."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from torchlint.cli import main
from torchlint.ipython import MARK, neutralise, restore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "notebooks"


def _check(cwd: Path, *args: str) -> Result:
    """``torchlint check`` in ``cwd`` (in-process, through click)."""
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        # pinned rules: rules added later must not change these exact expectations;
        # the notebook fixture's findings are TL301's, a preview rule
        return CliRunner().invoke(main, ["check", "--no-cache", "--preview",
                                         "--select", "TL001,TL301", *args])
    finally:
        os.chdir(previous)


def test_real_subprocess(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "train.ipynb", tmp_path / "train.ipynb")
    done = subprocess.run([sys.executable, "-m", "torchlint", "check", "--no-cache", "--preview", "."],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stdout.count("train.ipynb:cell 3:") == 2


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    target = tmp_path / "train.ipynb"
    shutil.copy(FIXTURES / "train.ipynb", target)
    return target


def test_findings_point_at_cell_and_line(notebook: Path) -> None:
    done = _check(notebook.parent, "train.ipynb")
    assert done.exit_code == 1, done.stderr
    assert done.stdout.splitlines() == [
        'train.ipynb:cell 3:2:8: TL301 [*] tensor created on the CPU, then moved to "cuda"; '
        "pass device= to the factory",
        "train.ipynb:cell 3:7:5: TL301 [*] tensor created on the CPU, then moved to device; "
        "pass device= to the factory",
    ]
    # magics, shell escapes, help and the %%bash cell are neither reported nor errors
    assert "TL001" not in done.stdout


def test_json_output_names_the_cell(notebook: Path) -> None:
    found = json.loads(_check(notebook.parent, "--output-format", "json", "train.ipynb").stdout)
    assert [(f["cell"], f["location"]["row"], f["location"]["column"]) for f in found] == [
        (3, 2, 8), (3, 7, 5)]
    edit = found[0]["fix"]["edits"][0]
    assert (edit["cell"], edit["location"], edit["end_location"]) == (
        3, {"row": 2, "column": 8}, {"row": 2, "column": 35})


def test_fix_changes_only_the_changed_cells(notebook: Path) -> None:
    before = notebook.read_text(encoding="utf-8")
    done = _check(notebook.parent, "--fix", "train.ipynb")
    assert done.exit_code == 0, done.stdout + done.stderr
    after = notebook.read_text(encoding="utf-8")
    expected = before.replace('"mask = torch.ones(128, 128).cuda()\\n"',
                              '"mask = torch.ones(128, 128, device=\\"cuda\\")\\n"').replace(
        '"x = torch.ones(2).to(device)"', '"x = torch.ones(2, device=device)"')
    assert after == expected  # every other byte (layout, metadata, outputs, é) as it was
    data = json.loads(after)
    assert data["cells"][2]["source"][3] == "    %time steps = torch.arange(10).to(device)\n"
    assert data["cells"][1]["outputs"][0]["text"] == ["ok\n"]
    assert _check(notebook.parent, "train.ipynb").exit_code == 0


def test_diff_shows_cells_and_writes_nothing(notebook: Path) -> None:
    before = notebook.read_bytes()
    done = _check(notebook.parent, "--diff", "train.ipynb")
    assert "--- a/train.ipynb:cell 3" in done.stdout
    assert '+mask = torch.ones(128, 128, device="cuda")' in done.stdout
    assert notebook.read_bytes() == before


def test_import_added_by_a_fix_stays_in_its_cell(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": "import torch\n%load_ext autoreload"},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": "y = torch.zeros(3).cuda(0)"},
    ]
    path = tmp_path / "one.ipynb"
    text = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                      indent=2)
    path.write_text(text)
    assert _check(tmp_path, "--fix", "one.ipynb").exit_code == 0
    data = json.loads(path.read_text())
    assert data["cells"][0]["source"] == "import torch\n%load_ext autoreload"
    assert data["cells"][1]["source"] == 'y = torch.zeros(3, device="cuda:0")'
    assert path.read_text() == text.replace(r'torch.zeros(3).cuda(0)',
                                            r'torch.zeros(3, device=\"cuda:0\")')


@pytest.mark.parametrize("content", [
    '{"cells": [ {"cell_type": "code", "source": ["x = 1"] ,\n',
    "[1, 2, 3]",
    '{"cells": [{"cell_type": "code", "source": 7}]}',
    "\xff\xfe not utf-8",
    "",
])
def test_malformed_notebook_is_one_line(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_bytes(content.encode("latin-1"))
    done = _check(tmp_path, "bad.ipynb")
    assert "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bad.ipynb:1:1: TL001 not a notebook")
    assert done.exit_code == 1


def test_syntax_error_in_a_cell(tmp_path: Path) -> None:
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": ["import torch\n"]},
             {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": ["def f(:\n", "    pass\n"]}]
    (tmp_path / "s.ipynb").write_text(json.dumps({"cells": cells, "metadata": {},
                                                  "nbformat": 4, "nbformat_minor": 5}))
    done = _check(tmp_path, "s.ipynb")
    assert done.stdout.startswith("s.ipynb:cell 2:1:"), done.stdout
    assert "TL001" in done.stdout


@pytest.mark.parametrize("cell", [
    "%matplotlib inline\nimport torch\n",
    "!pip install torch\nx = 1\n",
    "torch.ones?\n??torch\n",
    "files = !ls\nout = %sx ls\n",
    "for i in range(2):\n    %time f(i)\n",
    "%%bash\necho hi\nnot python (at all\n",
    "%cd \\\n  /tmp\nx = 1\n",
])
def test_ipython_syntax_round_trips(cell: str) -> None:
    neutral, replaced = neutralise(cell)
    assert neutral.count("\n") == cell.count("\n")
    assert MARK in neutral
    compile(neutral, "<cell>", "exec")
    assert restore(neutral, replaced) == cell


def test_strings_are_not_magics() -> None:
    cell = 'doc = """\n%not a magic\n!nor this\n"""\nq = "what?"\n'
    assert neutralise(cell) == (cell, [])


def test_fix_keeps_crlf_json_layout(tmp_path: Path) -> None:
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": ["import torch\r\n", "x = torch.ones(3).cuda()\r\n"]}]
    raw = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                     indent=1).replace("\n", "\r\n") + "\r\n"
    path = tmp_path / "crlf.ipynb"
    path.write_bytes(raw.encode())
    _check(tmp_path, "--fix", "crlf.ipynb")
    fixed = path.read_bytes().decode()
    assert fixed == raw.replace("torch.ones(3).cuda()", 'torch.ones(3, device=\\"cuda\\")')
    assert "\n" not in fixed.replace("\r\n", "")


V3 = """{
 "metadata": {"name": "old"},
 "nbformat": 3,
 "nbformat_minor": 0,
 "worksheets": [
  {
   "cells": [
    {"cell_type": "heading", "level": 1, "metadata": {}, "source": ["Title"]},
    {"cell_type": "code", "collapsed": false,
     "input": ["import torch\\n", "x = torch.ones(3).cuda()"], "language": "python",
     "metadata": {}, "outputs": [], "prompt_number": 1}
   ],
   "metadata": {}
  }
 ]
}
"""


def test_nbformat_3_is_linted_and_fixed(tmp_path: Path) -> None:
    path = tmp_path / "old.ipynb"
    path.write_text(V3)
    result = _check(tmp_path, "old.ipynb")
    assert result.output.splitlines()[0].startswith("old.ipynb:cell 2:2:5: TL301 ")
    _check(tmp_path, "--fix", "old.ipynb")
    fixed = V3.replace("torch.ones(3).cuda()", 'torch.ones(3, device=\\"cuda\\")')
    assert path.read_text() == fixed


def test_notebook_on_stdin_is_read_as_a_notebook(notebook: Path) -> None:
    data = notebook.read_bytes()
    args = ["check", "--no-cache", "--preview", "--select", "TL001,TL301", "-",
            "--stdin-filename", "train.ipynb"]
    found = CliRunner().invoke(main, args, input=data)
    assert found.exit_code == 1
    assert [line.split(": TL")[0] for line in found.stdout.splitlines()] == [
        "train.ipynb:cell 3:2:8", "train.ipynb:cell 3:7:5"]
    full = CliRunner().invoke(main, [*args, "--output-format", "full"], input=data)
    assert "2 | mask = torch.ones(128, 128).cuda()" in full.stdout
    fixed = CliRunner().invoke(main, [*args, "--fix"], input=data)
    assert fixed.exit_code == 0
    _check(notebook.parent, "--fix", "train.ipynb")  # the same bytes as fixing the file
    assert fixed.stdout_bytes == notebook.read_bytes() != data
