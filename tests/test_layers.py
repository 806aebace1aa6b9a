"""The house rules of the code: no import cycles, and no layer importing a layer above it.

Every import counts, at the top of a module or inside a function: a cycle hidden in a
function is still a cycle. Imports under ``if TYPE_CHECKING:`` never run, so they cannot
make a cycle, but they must not reach a higher layer either. The layers, lowest first,
are listed in CONTRIBUTING.md.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# package folder -> package name
PACKAGES = {ROOT / "torchlint": "torchlint", ROOT / "rules": "torchlint.rules"}

# Each module's layer: the first matching prefix decides, lowest layer first. A module may
# import modules of its own layer or of lower layers only.
LAYERS: list[tuple[int, tuple[str, ...]]] = [
    (0, ("torchlint.diagnostic", "torchlint.source", "torchlint.codes", "torchlint.catalog",
         "torchlint.notebook", "torchlint.ipynb_text", "torchlint.ipython",
         "torchlint.fix.text")),
    (1, ("torchlint.analysis",)),
    (2, ("torchlint.rule", "torchlint.fix.edits", "torchlint.fix.resolve",
         "torchlint.engine.prefilter", "torchlint.engine.positions",
         "torchlint.engine.suppression", "torchlint.engine.parse", "torchlint.engine.reparse",
         "torchlint.engine.triage")),
    (3, ("torchlint.rules",)),
    (4, ("torchlint.config", "torchlint.engine", "torchlint.fix", "torchlint.registry",
         "torchlint.docs")),
    (5, ("torchlint.run",)),
    (6, ("torchlint.reporters",)),
    (7, ("torchlint.cli", "torchlint.commands", "torchlint.lsp", "torchlint.flake8",
         "torchlint.__main__")),
]


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder, package in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module of ours that ``name`` names (``torchlint.x.y`` may be a name in ``x``)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the import statements under ``if TYPE_CHECKING:``."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found.update(id(n) for child in node.body for n in ast.walk(child))
    return found


def imports_of(module: str, *, runtime_only: bool = False) -> set[str]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    skipped = _type_checking_nodes(tree) if runtime_only else set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            resolved = _resolve(target)
            if resolved is not None and resolved != module:
                found.add(resolved)
    # importing a package runs its __init__: only the package itself is a dependency
    return found


GRAPH = {module: imports_of(module) for module in MODULES}
RUNTIME_GRAPH = {module: imports_of(module, runtime_only=True) for module in MODULES}


def layer(module: str) -> int:
    if module == "torchlint":  # the package's __init__: its version
        return 0
    for rank, prefixes in LAYERS:
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS and CONTRIBUTING.md")


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        layer(module)


def test_no_import_cycles() -> None:
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(RUNTIME_GRAPH[module]):
            if state.get(target) == 1:
                cycles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(RUNTIME_GRAPH):
        if module not in state:
            visit(module)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_upward_imports(module: str) -> None:
    upward = sorted(t for t in GRAPH[module] if layer(t) > layer(module))
    assert not upward, f"{module} (layer {layer(module)}) imports higher layers: {upward}"


def test_analysis_imports_no_engine_fix_run_or_integration() -> None:
    for module, targets in GRAPH.items():
        if module.startswith("torchlint.analysis"):
            bad = [t for t in targets if t.startswith((
                "torchlint.engine", "torchlint.fix", "torchlint.run", "torchlint.cli",
                "torchlint.lsp", "torchlint.flake8", "torchlint.reporters", "torchlint.rules",
                "torchlint.config", "torchlint.rule"))]
            assert not bad, f"{module} imports {bad}"


def test_rules_do_not_import_each_other_across_families() -> None:
    for module, targets in GRAPH.items():
        if not module.startswith("torchlint.rules."):
            continue
        family = module.split(".")[2]
        others = [t for t in targets if t.startswith("torchlint.rules.")
                  and t.split(".")[2] not in (family, "patterns")]
        assert not others, f"{module} imports another family's module: {others}"


def test_rules_import_each_other_through_the_package_name() -> None:
    """`rules/` is installed as `torchlint.rules`: an import of `rules.x` works only when the
    checkout's root happens to be on sys.path, and fails in an installed torchlint."""
    import ast

    root = Path(__file__).resolve().parent.parent
    wrong = []
    for path in sorted((root / "rules").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (
                    node.module or "").split(".")[0] == "rules":
                wrong.append(f"{path.relative_to(root)}:{node.lineno}")
            elif isinstance(node, ast.Import) and any(
                    alias.name.split(".")[0] == "rules" for alias in node.names):
                wrong.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not wrong, wrong
