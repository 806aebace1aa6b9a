"""Notebooks against the same code as a .py file, cell by cell.

    python benchmarks/notebooks.py DIR [DIR ...] [--select CODES] [--show N]

For every .ipynb under the directories: torchlint's findings on the notebook, and on a
.py file holding the same code cells, each turned into plain Python by IPython's own
input transformer (``pip install ipython``), with the cells that do not parse left out as
Jupyter would fail them. The .py findings are mapped back to their cell and line and the
two sets compared. Prints how many notebooks have a cell that does not parse (which used
to hide the whole notebook), how many findings each way, and every difference.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from IPython.core.inputtransformer2 import TransformerManager

PYTHON_CELL_MAGICS = ("time", "timeit", "capture", "prun", "debug")


def plain_python(cell: str) -> str | None:
    """The cell as IPython runs it, line for line; None when it does not parse."""
    lines = cell.splitlines()
    if not lines:
        return ""
    first = lines[0].strip()
    if first.startswith("%%"):
        name = first[2:].split()[0] if first[2:].split() else ""
        if name not in PYTHON_CELL_MAGICS:
            return "\n".join("# " + line for line in lines)
        body = plain_python("\n".join(lines[1:]))
        return None if body is None else "# " + lines[0] + ("\n" + body if body else "")
    blank = next((i for i, text in enumerate(lines) if text.strip()), len(lines))
    # IPython drops leading blank lines: put them back so every line keeps its number
    text = "\n" * blank + TransformerManager().transform_cell(cell).rstrip("\n")
    missing = cell.rstrip("\n").count("\n") - text.count("\n")
    if missing > 0:  # a continued magic became one line: pad at the end
        text += "\n" * missing
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    return text


def check(paths: list[str], select: str, cwd: Path) -> list[dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "torchlint", "check", "--no-cache",
                           "--exit-zero", "-q", "--output-format", "json", "--select", select,
                           *paths], capture_output=True, text=True, cwd=cwd)
    return json.loads(done.stdout or "[]")


def compare(notebook: Path, select: str, work: Path) -> dict[str, Any]:
    data = json.loads(notebook.read_text(encoding="utf-8"))
    cells = data.get("cells") or [c for s in data.get("worksheets", []) for c in s["cells"]]
    key = "source" if "cells" in data else "input"
    parts, starts, broken = [], {}, []
    line = 1
    for index, cell in enumerate(cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get(key, "")
        source = "".join(source) if isinstance(source, list) else source
        python = plain_python(source)
        if python is None:
            broken.append(index)
            python = "\n".join("# " + text for text in source.splitlines())
        parts.append(f"# cell {index}\n{python}\n")
        starts[index] = line + 1
        line += 1 + python.count("\n") + 1
    script = work / (notebook.stem + ".py")
    script.write_text("".join(parts), encoding="utf-8")
    as_py = set()
    ordered = sorted(starts.items(), key=lambda item: item[1])
    for found in check([str(script)], select, work):
        row = found["location"]["row"]
        cell = max((i for i, start in ordered if start <= row), default=None,
                   key=lambda i: starts[i])
        if cell is not None:
            as_py.add((cell, row - starts[cell] + 1, found["location"]["column"], found["code"]))
    as_notebook = {(f["cell"], f["location"]["row"], f["location"]["column"], f["code"])
                   for f in check([str(notebook)], select, work) if f["code"] != "TL001"}
    return {"broken": broken, "notebook": as_notebook, "py": as_py}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--select", default="ALL")
    parser.add_argument("--show", type=int, default=20)
    args = parser.parse_args()
    notebooks = sorted(p for d in args.dirs for p in Path(d).rglob("*.ipynb")
                       if ".ipynb_checkpoints" not in p.parts)
    totals = {"notebooks": len(notebooks), "with a cell that does not parse": 0,
              "findings as notebooks": 0, "findings as .py": 0, "only in one": 0}
    differences = []
    with tempfile.TemporaryDirectory() as folder:
        for notebook in notebooks:
            result = compare(notebook, args.select, Path(folder))
            totals["with a cell that does not parse"] += bool(result["broken"])
            totals["findings as notebooks"] += len(result["notebook"])
            totals["findings as .py"] += len(result["py"])
            for side, found in (("notebook only", result["notebook"] - result["py"]),
                                (".py only", result["py"] - result["notebook"])):
                for item in sorted(found):
                    differences.append((str(notebook), side, item))
    totals["only in one"] = len(differences)
    for name, value in totals.items():
        print(f"{name:34} {value}")
    for path, side, (cell, line, column, code) in differences[:args.show]:
        print(f"{side:14} {path}:cell {cell}:{line}:{column}: {code}")


if __name__ == "__main__":
    main()
