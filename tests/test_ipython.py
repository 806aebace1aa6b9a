"""IPython syntax is recognised exactly where IPython recognises it.

IPython's own input transformer (``IPython.core.inputtransformer2``, a test-only
dependency) is the oracle: for a generated set of cells, the lines torchlint sets aside
must be the lines IPython rewrites, and a cell IPython turns into valid Python must stay
valid Python for torchlint.
"""

from __future__ import annotations

import ast
import itertools
import random

import pytest

from torchlint.ipython import (
    PLACEHOLDER,
    PYTHON_CELL_MAGICS,
    RestoreError,
    dedent,
    is_placeholder,
    leading_indent,
    neutralise,
    reindent,
    restore,
    split_lines,
)

it2 = pytest.importorskip("IPython.core.inputtransformer2")


def _changed_block(old: list[str], new: list[str]) -> tuple[int, int, int]:
    """IPython replaces one run of lines by one line: (start, end in old, end in new)."""
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    tail = 0
    while tail < min(len(old), len(new)) - start and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return start, len(old) - tail, len(new) - tail


def ipython_rewrites(cell: str) -> set[int] | None:
    """The 0-based lines of ``cell`` IPython rewrites, or None when its clean-up steps
    (leading blank lines, a common indent, >>> prompts) change the cell, as torchlint does
    not do those, or when IPython cannot run the cell at all (an inconsistent dedent):
    such cells are left out of the comparison."""
    manager = it2.TransformerManager()
    text = cell if cell.endswith("\n") else cell + "\n"
    lines = text.splitlines(keepends=True)
    cleaned = lines
    for step in manager.cleanup_transforms:
        cleaned = step(cleaned)
    if cleaned != lines:
        return None
    if it2.cell_magic(lines) != lines:
        name = lines[0][2:].split()[0] if lines[0][2:].split() else ""
        if name in PYTHON_CELL_MAGICS:  # the body is a cell of its own
            body = ipython_rewrites("".join(lines[1:])) if len(lines) > 1 else set()
            return None if body is None else {0} | {line + 1 for line in body}
        return set(range(len(lines)))
    origin = [[i] for i in range(len(lines))]  # current line -> the original lines in it
    rewritten: set[int] = set()
    for _ in range(it2.TRANSFORM_LOOP_LIMIT):
        try:
            tokens = it2.make_tokens_by_line(lines)
        except SyntaxError:  # IPython's tokenizing fails: the cell does not run at all
            return None
        found = [f for f in (kind.find(tokens) for kind in manager.token_transformers) if f]
        for transform in sorted(found, key=it2.TokenTransformBase.sortby):
            try:
                new = transform.transform(lines)
            except SyntaxError:
                continue
            start, old_end, new_end = _changed_block(lines, new)
            consumed = sorted({o for part in origin[start:old_end] for o in part})
            rewritten.update(consumed)
            origin = origin[:start] + [consumed] * (new_end - start) + origin[old_end:]
            lines = new
            break
        else:
            break
    return rewritten


def torchlint_sets_aside(cell: str) -> set[int]:
    neutral, _ = neutralise(cell)
    return {i for i, line in enumerate(split_lines(neutral)) if is_placeholder(line)}


# lines of every kind: IPython syntax, Python that looks like it, and the places in between
FRAGMENTS = [
    "x = 1", "import torch", "%matplotlib inline", "%time y = f(x)", "%load_ext autoreload",
    "!ls -la", "!!ls", "!pip install torch", "files = !ls *.py", "x=!ls", "out = %pwd",
    "res = %timeit -o f()", "x: int = %pwd", "x == !ls", "a = b = %pwd", "x = 1; %pwd",
    "torch.nn.Linear?", "torch.nn??", "??torch.nn", "?torch", "%timeit?", "%%timeit?",
    "obj.layers[0]?", "torch.*rand*?", "x = y?", "f(x)?", "y ?", "print?", "?", "??",
    "# what is this?", "x = 1  # really?", 's = "why?"', "a = b % c", "loss = a % 2",
    'print("%d items %s"', "% (a, b))", 'print("%d items %s" \\', '      % (a, b))',
    'msg = "%d items" \\', "% n", "%cd \\", "  /tmp", "!echo a \\", "b",
    "/f 1 2", ",f a b", ";f a b", "/", "/ f", "x = (1", ", 2)", "ok = (a", "!= b)",
    'doc = """', "%not a magic", "!nor this", '"""', "s = '''?", "'''",
    "if True:", "    !ls", "    %time f(i)", "    torch.nn?", "    y = 1", "for i in range(3):",
    "d = {'a': 1}", "x = d != 2", "%%time", "%%capture out", "%%bash", "%%writefile a.py",
    "def f():", "    return 1", "@dec", "(y := 5)", "print('%s' % loss)", "x = [", "%pwd", "]",
    "x = \\", "%pwd", "get_ipython().run_line_magic('time', 'f()')", "y = f(x,", "  z)?",
    "print(f'{x}?')", "x = {", "  'a': !ls", "}",
]


def _cells() -> list[str]:
    cells = [*FRAGMENTS, *("\n".join(pair) for pair in itertools.product(FRAGMENTS, repeat=2))]
    chooser = random.Random(13)
    cells += ["\n".join(chooser.choice(FRAGMENTS) for _ in range(chooser.randint(3, 6)))
              for _ in range(1500)]
    return cells


CELLS = _cells()


def _compiles(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def test_the_lines_set_aside_are_the_lines_ipython_rewrites() -> None:
    compared = 0
    wrong: list[tuple[str, set[int], set[int]]] = []
    for cell in CELLS:
        expected = ipython_rewrites(cell)
        if expected is None:
            continue
        compared += 1
        got = torchlint_sets_aside(cell)
        if got != expected:
            wrong.append((cell, expected, got))
    assert compared > 5000
    assert not wrong, "\n".join(f"{c!r}: IPython {e}, torchlint {g}" for c, e, g in wrong[:20])


def _python_ipython_runs(cell: str) -> str | None:
    """The Python IPython runs for ``cell`` (for %%time and the like: the body's; None for
    the other cell magics, whose body is not Python)."""
    manager = it2.TransformerManager()
    lines = cell.splitlines(keepends=True)
    if lines and it2.cell_magic(lines) != lines:
        name = lines[0][2:].split()[0] if lines[0][2:].split() else ""
        return _python_ipython_runs("".join(lines[1:])) if name in PYTHON_CELL_MAGICS else None
    return manager.transform_cell(cell)


def test_what_ipython_runs_torchlint_parses() -> None:
    wrong = []
    for cell in CELLS:
        if ipython_rewrites(cell) is None:
            continue
        ipython_text = _python_ipython_runs(cell)
        neutral, _ = neutralise(cell)
        if ipython_text is not None and _compiles(ipython_text) and not _compiles(neutral):
            wrong.append(cell)
    assert not wrong, wrong[:20]


@pytest.mark.parametrize("cell", CELLS[:: max(1, len(CELLS) // 400)])
def test_round_trip_keeps_every_line(cell: str) -> None:
    neutral, replaced = neutralise(cell)
    assert len(split_lines(neutral)) == len(split_lines(cell))
    assert restore(neutral, replaced) == cell


@pytest.mark.parametrize(("cell", "python"), [
    # percent-formatting continuations and comments ending in '?' are Python
    ('print("%d items %s"\n      % (a, b))\n', True),
    ('msg = "%d items" \\\n% n\n', True),
    ("# what is this?\nx = 1  # really?\n", True),
    ("%matplotlib inline\nimport torch\n", False),
    ("for i in range(2):\n    %time f(i)\n", False),
])
def test_known_cases(cell: str, python: bool) -> None:
    neutral, replaced = neutralise(cell)
    assert (neutral == cell and not replaced) is python
    compile(neutral, "<cell>", "exec")


def test_python_cell_magics_keep_their_body() -> None:
    cell = "%%time\nfor x in batches:\n    !echo hi\n    loss = model(x)\n"
    neutral, replaced = neutralise(cell)
    assert neutral == (f"{PLACEHOLDER}\nfor x in batches:\n    {PLACEHOLDER}\n"
                       "    loss = model(x)\n")
    assert replaced == ["%%time\n", "    !echo hi\n"]
    opaque, _ = neutralise("%%bash\nfor x in *; do echo $x; done\n")
    assert opaque == f"{PLACEHOLDER}\n{PLACEHOLDER}\n"


def test_assignment_keeps_its_target() -> None:
    neutral, _ = neutralise("files = !ls\nout = %sx ls\n")
    assert neutral.splitlines()[0].startswith("files = None")
    assert neutral.splitlines()[1].startswith("out = None")


def test_restore_refuses_a_lost_placeholder() -> None:
    neutral, replaced = neutralise("%pwd\nx = 1\n")
    with pytest.raises(RestoreError):
        restore(neutral.replace(PLACEHOLDER, "pass"), replaced)


@pytest.mark.parametrize("cell", [
    ' device = "cuda"\n device\n',
    "\n  \n\tfor x in y:\n\t    f(x)\n\n\t%time g()\n",
    "  if a:\n      b = 1\n  c = 2",
])
def test_the_indentation_ipython_removes_is_removed(cell: str) -> None:
    indent = leading_indent(cell)
    assert indent
    expected = it2.TransformerManager().transform_cell(cell)
    neutral, _ = neutralise(dedent(cell, indent))
    compile(neutral, "<cell>", "exec")
    compile(expected, "<cell>", "exec")
    assert [line.strip() for line in dedent(cell, indent).splitlines() if line.strip()] == [
        line.strip() for line in cell.splitlines() if line.strip()]


@pytest.mark.parametrize("cell", [" x = 1\ny = 2\n", "x = 1\n", "   \n"])
def test_a_cell_not_uniformly_indented_is_left_as_it_is(cell: str) -> None:
    assert leading_indent(cell) == ""
    assert dedent(cell, "") == cell


def test_reindent_puts_the_indentation_back_on_the_lines_a_fix_wrote() -> None:
    cell = "  import torch\n\n  x = f(1)\n    \n  y = 2"
    fixed = "import torch\nimport numpy\n\nx = g(1)\n  \ny = 2"
    assert reindent(cell, "  ", fixed) == (
        "  import torch\n  import numpy\n\n  x = g(1)\n    \n  y = 2")
    assert reindent(cell, "  ", dedent(cell, "  ")) == cell
