"""Notebooks as Jupyter runs them: a cell that does not parse hides nothing else, %%time
cells are Python, and machine formats point at the line of the .ipynb file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from torchlint.cli import main


def _cell(source: str | list[str]) -> dict[str, Any]:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": source}


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _write(path: Path, *sources: str | list[str], markdown_first: bool = True) -> str:
    cells = [_cell(s) for s in sources]
    if markdown_first:
        cells.insert(0, {"cell_type": "markdown", "metadata": {}, "source": ["# Title\n"]})
    text = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                      indent=1) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


def _check(cwd: Path, *args: str, select: str = "TL001,TL301,TL704") -> Result:
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        # pinned rules: rules added later must not change these exact expectations
        # (TL301, a preview rule, is one of them)
        return CliRunner().invoke(main, ["check", "--no-cache", "--preview", "--select", select,
                                         *args])
    finally:
        os.chdir(previous)


EXERCISE = [
    _lines("import torch\nfrom torch.autograd import Variable as V\n"),
    _lines("# TODO: define the model\nmodel = \n"),
    _lines("x = torch.ones(3).cuda()\ny = V(x)\n"),
]


def test_a_cell_that_does_not_parse_hides_nothing_else(tmp_path: Path) -> None:
    _write(tmp_path / "ex.ipynb", *EXERCISE)
    done = _check(tmp_path, "ex.ipynb")
    assert done.stdout.splitlines()[0] == "ex.ipynb:cell 3:2:9: TL001 cannot parse: invalid syntax"
    assert [line.split(" TL")[0] + " TL" + line.split(" TL")[1][:3]
            for line in done.stdout.splitlines()] == [
        "ex.ipynb:cell 3:2:9: TL001",
        "ex.ipynb:cell 4:1:5: TL301",
        "ex.ipynb:cell 4:2:5: TL704",  # the name imported in cell 2 is known in cell 4
    ], done.stdout
    quiet = _check(tmp_path, "ex.ipynb", select="TL301")
    assert [line.split(": ")[1].split()[0] for line in quiet.stdout.splitlines()] == ["TL301"]


def test_fixes_leave_the_cell_that_does_not_parse_alone(tmp_path: Path) -> None:
    before = _write(tmp_path / "ex.ipynb", *EXERCISE)
    done = _check(tmp_path, "--fix", "ex.ipynb", select="TL001,TL301")
    assert done.exit_code == 1  # TL001 remains
    after = (tmp_path / "ex.ipynb").read_text(encoding="utf-8")
    assert after == before.replace("torch.ones(3).cuda()", 'torch.ones(3, device=\\"cuda\\")')


def test_several_broken_cells_and_a_cross_cell_error(tmp_path: Path) -> None:
    _write(tmp_path / "ex.ipynb",
           "import torch\n",
           "lr = \n",
           "def train(model):\n",  # a body to write, left empty
           "y = (1,\n",  # never closed
           "z = torch.zeros(2).cuda()\n")
    done = _check(tmp_path, "ex.ipynb")
    codes = [(line.split(":")[1], line.split(": ")[1].split()[0])
             for line in done.stdout.splitlines()]
    assert codes == [("cell 3", "TL001"), ("cell 4", "TL001"), ("cell 5", "TL001"),
                     ("cell 6", "TL301")]


def test_percent_continuations_and_question_comments_are_python(tmp_path: Path) -> None:
    _write(tmp_path / "fmt.ipynb", _lines(
        "import torch\n"
        "print('epoch %d, loss %.4f'\n"
        "      % (1, 0.5))\n"
        "# what does this do?\n"
        "x = torch.ones(3).cuda()\n"))
    done = _check(tmp_path, "fmt.ipynb")
    assert [line.split(": ")[0] for line in done.stdout.splitlines()] == ["fmt.ipynb:cell 2:5:5"]


def test_time_cells_are_linted_and_fixed(tmp_path: Path) -> None:
    before = _write(tmp_path / "t.ipynb",
                    "import torch\n",
                    _lines("%%time\nfor step in range(3):\n    x = torch.ones(3).cuda()\n"),
                    _lines("%%bash\nx = torch.ones(3).cuda()\n"),
                    _lines("%%capture out\n!nvidia-smi\ny = torch.ones(3).cuda()\n"))
    done = _check(tmp_path, "t.ipynb")
    assert [line.split(": ")[0] for line in done.stdout.splitlines()] == [
        "t.ipynb:cell 3:3:9", "t.ipynb:cell 5:3:5"]
    _check(tmp_path, "--fix", "t.ipynb")
    after = (tmp_path / "t.ipynb").read_text(encoding="utf-8")
    fixed = 'torch.ones(3, device=\\"cuda\\")'
    assert after == before.replace(
        '"    x = torch.ones(3).cuda()\\n"', f'"    x = {fixed}\\n"').replace(
        '"y = torch.ones(3).cuda()\\n"', f'"y = {fixed}\\n"')
    assert '"x = torch.ones(3).cuda()\\n"' in after  # the %%bash cell is untouched


# ----------------------------------------------------------------- positions in the file
def _at(raw: str, line: int, column: int, end_line: int, end_column: int) -> str:
    lines = raw.splitlines()
    assert line == end_line
    return lines[line - 1][column - 1:end_column - 1]


def _escaped_notebook(tmp_path: Path) -> str:
    return _write(
        tmp_path / "nb.ipynb",
        "import torch\n",
        _lines('d = {"k": "é"}; mask = torch.ones(2).cuda()\n'
               'w = torch.zeros(4).cuda()\n'),
        # a cell whose source is one string, as some tools write it
        'v = 1\nb = torch.rand(2).cuda()',
    )


def test_sarif_points_into_the_ipynb_text(tmp_path: Path) -> None:
    raw = _escaped_notebook(tmp_path)
    sarif = json.loads(_check(tmp_path, "--output-format", "sarif", "nb.ipynb").stdout)
    found = []
    for result in sarif["runs"][0]["results"]:
        region = result["locations"][0]["physicalLocation"]["region"]
        found.append((result["properties"]["cell"], _at(
            raw, region["startLine"], region["startColumn"], region["endLine"],
            region["endColumn"])))
    # the span in the file is the code as the file spells it (JSON escapes included)
    assert found == [(3, "torch.ones(2).cuda()"), (3, "torch.zeros(4).cuda()"),
                     (4, "torch.rand(2).cuda()")]
    assert '\\"k\\": \\"\\u00e9\\"}; mask = torch.ones' in raw  # escapes before the span


def test_pylint_gitlab_and_github_name_the_ipynb_line(tmp_path: Path) -> None:
    raw = _escaped_notebook(tmp_path)
    raw_lines = raw.splitlines()

    def line_of(code: str) -> int:
        return next(i for i, text in enumerate(raw_lines, 1) if code in text)

    expected = [line_of("torch.ones(2)"), line_of("torch.zeros(4)"), line_of("torch.rand(2)")]
    pylint = _check(tmp_path, "--output-format", "pylint", "nb.ipynb").stdout.splitlines()
    assert [int(line.split(":")[1]) for line in pylint] == expected
    assert pylint[0].endswith("cell 3: tensor created on the CPU, then moved to \"cuda\"; "
                              "pass device= to the factory")
    gitlab = json.loads(_check(tmp_path, "--output-format", "gitlab", "nb.ipynb").stdout)
    assert [issue["location"]["lines"]["begin"] for issue in gitlab] == expected
    assert gitlab[0]["description"].startswith("cell 3: TL301")
    github = _check(tmp_path, "--output-format", "github", "nb.ipynb").stdout.splitlines()
    assert [int(line.split(",line=")[1].split(",")[0]) for line in github] == expected
    assert "nb.ipynb:cell 3:1:24: TL301" in github[0]


def test_human_formats_keep_the_cell(tmp_path: Path) -> None:
    _escaped_notebook(tmp_path)
    concise = _check(tmp_path, "nb.ipynb").stdout.splitlines()
    assert [line.split(": ")[0] for line in concise] == [
        "nb.ipynb:cell 3:1:24", "nb.ipynb:cell 3:2:5", "nb.ipynb:cell 4:2:5"]
    found = json.loads(_check(tmp_path, "--output-format", "json", "nb.ipynb").stdout)
    assert [(f["cell"], f["location"]["row"]) for f in found] == [(3, 1), (3, 2), (4, 2)]


def test_a_cell_ipython_dedents_is_linted_and_fixed_in_place(tmp_path: Path) -> None:
    # every line of the second cell starts with one space: IPython removes it and runs it
    from IPython.core.inputtransformer2 import TransformerManager

    dedented = [" from torch.autograd import Variable\n", "\n",
                " x = Variable(torch.ones(3))\n", "  \n", " x"]
    _write(tmp_path / "nb.ipynb", ["import torch\n"], dedented, "y = Variable(x)\n")
    done = _check(tmp_path, "nb.ipynb", select="TL001,TL704")
    assert [line.split(" [*]")[0] for line in done.stdout.splitlines()[:2]] == [
        "nb.ipynb:cell 3:3:6: TL704", "nb.ipynb:cell 4:1:5: TL704"]
    assert "TL001" not in done.stdout
    fixed = _check(tmp_path, "nb.ipynb", "--fix", "--unsafe-fixes", select="TL704")
    assert fixed.exit_code == 0, fixed.output
    cells = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))["cells"]
    source = "".join(cells[2]["source"])
    assert source == "\n x = torch.ones(3)\n  \n x"  # the unused import went too
    compile(TransformerManager().transform_cell(source), "<cell>", "exec")
