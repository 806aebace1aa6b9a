"""TL510-TL512 proven by running: every ``# run: SHAPE raises|warns|clean`` line of their
fixtures is built with real torch on the CPU and run on an input of that shape. A run that
raises (or warns) must do so in a layer whose construction line the rule reports, every
reported line must be proven by some run, and look-alikes must run cleanly.

Run with: python -m pytest -m torch tests/test_shapes_execution.py
"""

from __future__ import annotations

import ast
import contextlib
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixture_support import FIXTURES, expected

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

_RUN = re.compile(r"#\s*run:\s*(?P<long>long\s+)?\((?P<shape>[\d,\s]+)\)\s+"
                  r"(?P<outcome>raises|warns|clean)")
CODES = ("TL510", "TL511", "TL512")


@contextlib.contextmanager
def _remember_lines(path: Path) -> Iterator[None]:
    """While active, each module remembers the line of ``path`` that built it (of a file
    under ``path`` for a folder: as ``(file, line)``)."""
    original = torch.nn.Module.__init__
    name = str(path)
    folder = path.is_dir()

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        frame = sys._getframe(1)
        # the first line of the fixture outside the module's own __init__ (a module class
        # of the fixture calls super().__init__() from there)
        while frame is not None and (not (frame.f_code.co_filename.startswith(
                name + "/") if folder else frame.f_code.co_filename == name) or (
                frame.f_locals.get("self") is self)):
            frame = frame.f_back
        if frame is not None and not hasattr(self, "_built_at"):
            line = frame.f_lineno
            object.__setattr__(self, "_built_at", (str(Path(frame.f_code.co_filename).relative_to(
                path)), line) if folder else line)

    torch.nn.Module.__init__ = init
    try:
        yield
    finally:
        torch.nn.Module.__init__ = original


def _load(path: Path) -> dict[str, object]:
    """Execute the fixture, not as __main__."""
    namespace: dict[str, object] = {"__name__": "fixture"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def _target(tree: ast.Module, line: int, namespace: dict[str, object]) -> torch.nn.Module:
    for stmt in tree.body:
        if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            if isinstance(stmt, ast.ClassDef):
                return namespace[stmt.name]()  # type: ignore[operator]
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
                return namespace[stmt.targets[0].id]  # type: ignore[return-value]
    raise AssertionError(f"no class or assignment holds the run line {line}")


def _run(model: torch.nn.Module, shape: tuple[int, ...], long: bool
         ) -> tuple[BaseException | None, list[int | None]]:
    """Run ``model``; the exception (or warning, raised as one) and the construction lines
    of the modules running when it was raised, innermost first (a layer inside a module
    class of the fixture used as a layer, then that module)."""
    stack: list[torch.nn.Module] = []

    def enter(module, args):
        stack.append(module)

    def leave(module, args, out):
        stack.pop()  # a hook that returned something would replace the output

    before = torch.nn.modules.module.register_module_forward_pre_hook(enter)
    after = torch.nn.modules.module.register_module_forward_hook(leave)
    torch.manual_seed(0)
    x = torch.randint(0, 10, shape) if long else torch.randn(*shape)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model(x)
    except Exception as exc:  # noqa: BLE001 - any failure is the outcome under test
        return exc, [getattr(m, "_built_at", None) for m in reversed(stack)]
    finally:
        before.remove()
        after.remove()
    return None, []


@pytest.mark.parametrize("code", CODES)
def test_reported_layers_are_where_torch_fails(code):
    path = FIXTURES / f"{code}.py"
    text = path.read_text()
    reported = {line for line, c in expected(text) if c == code}
    with _remember_lines(path):
        _check_runs(path, text, reported)


def _check_runs(path: Path, text: str, reported: set[int]) -> None:
    namespace = _load(path)
    tree = ast.parse(text)
    proven: set[int] = set()
    runs = 0
    for number, line in enumerate(text.splitlines(), start=1):
        match = _RUN.search(line)
        if match is None:
            continue
        runs += 1
        shape = tuple(int(s) for s in match["shape"].replace(",", " ").split())
        model = _target(tree, number, namespace)
        failure, lines = _run(model, shape, bool(match["long"]))
        # the innermost running module built on a reported line: a layer, or a module
        # class used as a layer that the rule reports at its construction
        built_at = next((line for line in lines if line in reported), lines[0] if lines
                        else None)
        outcome = match["outcome"]
        where = f"{path.name}:{number}"
        if outcome == "clean":
            assert failure is None, f"{where}: the look-alike fails: {failure!r}"
            continue
        assert failure is not None, f"{where}: torch accepts the chain the rule reports"
        assert isinstance(failure, Warning) == (outcome == "warns"), f"{where}: {failure!r}"
        assert built_at in reported, (
            f"{where}: torch fails in the layer built on line {built_at}, not on a reported "
            f"line ({sorted(reported)}): {failure!r}")
        proven.add(built_at)
    assert runs > 0
    assert proven == reported, f"reported lines no run proves: {sorted(reported - proven)}"


def test_project_findings_are_where_torch_fails(monkeypatch):
    """The project fixture: sizes from other files. Each ``# run:`` line of train.py builds
    a model as the project does; a failure must be in a layer a finding reports."""
    from torchlint.config.file_settings import FileSettings
    from torchlint.engine.lint import lint_source
    from torchlint.analysis.project import Project
    from torchlint.registry import all_rules
    from torchlint.source import SourceFile

    root = FIXTURES / "shapes_project"
    rules = [all_rules()[code] for code in CODES]
    settings = FileSettings(frozenset(CODES), project=Project())
    reported = set()
    for path in sorted(root.rglob("*.py")):
        result = lint_source(SourceFile.read(path), settings)
        reported |= {(str(path.relative_to(root)), d.line) for d in result.diagnostics}
    assert reported and len(rules) == 3
    monkeypatch.syspath_prepend(str(root))
    for module in [m for m in sys.modules if m == "models" or m.startswith("models.")]:
        monkeypatch.delitem(sys.modules, module)
    train = root / "train.py"
    text = train.read_text()
    proven = set()
    with _remember_lines(root):
        namespace = _load(train)
        tree = ast.parse(text)
        for number, line in enumerate(text.splitlines(), start=1):
            match = _RUN.search(line)
            if match is None:
                continue
            shape = tuple(int(s) for s in match["shape"].replace(",", " ").split())
            failure, lines = _run(_target(tree, number, namespace), shape, False)
            if match["outcome"] == "clean":
                assert failure is None, f"train.py:{number}: the look-alike fails: {failure!r}"
                continue
            assert failure is not None, f"train.py:{number}: torch accepts the chain"
            built_at = next((line for line in lines if line in reported), None)
            assert built_at is not None, (number, lines, sorted(reported))
            proven.add(built_at)
    assert proven == reported
