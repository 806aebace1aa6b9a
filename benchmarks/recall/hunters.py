#!/usr/bin/env python3
"""Hunt real instances of torchlint's bugs in a corpus, independently of torchlint.

    python benchmarks/recall/hunters.py --corpus DIR --out candidates.tsv --context todo.txt

Each hunter is a small ``ast`` scan that over-approximates one rule's bug: it lists every
place that *might* be an instance, and a person reads each candidate and judges it (the
verdicts live in ``instances.tsv``). Nothing here imports torchlint: only the standard
library reads the code, so a rule's blind spots cannot hide its own misses.

Python files and the code cells of notebooks are read (a cell is ``path#cellN``, N the
1-based position among all the notebook's cells, as torchlint reports it; IPython magics
and shell lines are blanked to ``pass`` so the cell parses with its line numbers intact).
Names resolve through the file's imports (every cell's imports for a notebook), with
``torch``, ``nn`` and ``F`` assumed when nothing binds them.

A candidate spans lines ``line``..``end_line``: the statement a statement-level pattern is
in, or the whole function or loop for patterns about a function (TL205, TL401, TL402).
When a rule has more than ``--sample`` (40) candidates, a fixed sample is kept: those whose
sha256 of (seed, repo, path, line, code) is smallest, as the precision harness samples.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

SKIP_DIRS = {".git", ".ipynb_checkpoints", "__pycache__", "build", "dist", "venv", ".venv",
             "node_modules", "site-packages", ".tox", ".eggs"}
DEFAULT_ALIASES = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional"}
MAGIC = re.compile(r"^(\s*)([%!]|\w+\s*=\s*[%!]|[\w.]+\?{1,2}\s*$)")


@dataclass(frozen=True)
class Candidate:
    code: str
    repo: str
    path: str
    line: int
    end_line: int
    source: str

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.repo, self.path, self.line, self.code)


# --- reading the corpus ---------------------------------------------------------------

def strip_magics(text: str) -> str | None:
    """A cell's code with IPython lines blanked (None for a cell magic such as %%bash)."""
    if text.lstrip().startswith("%%"):
        return None
    lines = []
    for line in text.splitlines():
        match = MAGIC.match(line)
        lines.append(f"{match.group(1)}pass" if match else line)
    return "\n".join(lines) + "\n"


def iter_sources(root: Path, repo: str) -> Iterator[tuple[str, str]]:
    """(path, code) of each Python file and notebook code cell of one repository."""
    base = root / repo
    for path in sorted(base.rglob("*")):
        if not path.is_file() or SKIP_DIRS & set(path.relative_to(base).parts[:-1]):
            continue
        rel = path.relative_to(base).as_posix()
        if path.suffix == ".py":
            yield rel, path.read_text(encoding="utf-8", errors="replace")
        elif path.suffix == ".ipynb":
            try:
                data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
            except ValueError:
                continue
            cells = data.get("cells") or [c for w in data.get("worksheets", [])
                                          for c in w.get("cells", [])]
            for index, cell in enumerate(cells, 1):
                if cell.get("cell_type") != "code":
                    continue
                text = cell.get("source", cell.get("input", ""))
                text = "".join(text) if isinstance(text, list) else text
                code = strip_magics(text)
                if code is not None:
                    yield f"{rel}#cell{index}", code


# --- name resolution and small AST helpers --------------------------------------------

def import_aliases(trees: list[ast.AST]) -> dict[str, str]:
    aliases = dict(DEFAULT_ALIASES)
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for name in node.names:
                    if name.asname:
                        aliases[name.asname] = name.name
                    else:
                        head = name.name.split(".")[0]
                        aliases[head] = head
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for name in node.names:
                    aliases[name.asname or name.name] = f"{node.module}.{name.name}"
    return aliases


def dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def qualified(node: ast.AST, aliases: dict[str, str]) -> str | None:
    name = dotted(node)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    if head in aliases:
        return aliases[head] + ("." + rest if rest else "")
    return name


def text(node: ast.AST) -> str:
    return ast.unparse(node)


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def parents_of(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    return parents


def statement_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST:
    while not isinstance(node, ast.stmt) and node in parents:
        node = parents[node]
    return node


def walk_body(nodes: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node under these statements, not entering nested functions or classes."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def method_name(call: ast.AST) -> str | None:
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def grad_off_item(item: ast.withitem, aliases: dict[str, str]) -> bool:
    expr = item.context_expr
    target = expr.func if isinstance(expr, ast.Call) else expr
    name = qualified(target, aliases) or ""
    return name.endswith(("no_grad", "inference_mode")) or (
        name.endswith("set_grad_enabled") and isinstance(expr, ast.Call) and expr.args
        and isinstance(expr.args[0], ast.Constant) and expr.args[0].value is False)


def under_grad_off(node: ast.AST, parents: dict, aliases: dict[str, str]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                grad_off_item(i, aliases) for i in node.items):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                (qualified(d.func if isinstance(d, ast.Call) else d, aliases) or "").endswith(
                    ("no_grad", "inference_mode")) for d in node.decorator_list):
            return True
    return False


def enclosing(node: ast.AST, parents: dict, kinds: tuple[type, ...]) -> ast.AST | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, kinds):
            return node
    return None


LOOPS = (ast.For, ast.AsyncFor, ast.While)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def in_loop(node: ast.AST, parents: dict) -> bool:
    """Inside a loop body of the same function (or of module code)."""
    while node in parents:
        node = parents[node]
        if isinstance(node, LOOPS):
            return True
        if isinstance(node, (*FUNCTIONS, ast.ClassDef, ast.Lambda)):
            return False
    return False


# --- the hunters ----------------------------------------------------------------------
# Each takes (tree, parents, aliases) and yields the nodes (or (first, last) line pairs)
# that may be instances of the rule's bug.

Hunter = Callable[[ast.AST, dict, dict], Iterator[ast.AST | tuple[int, int]]]
HUNTERS: dict[str, Hunter] = {}


def hunter(code: str) -> Callable[[Hunter], Hunter]:
    def register(function: Hunter) -> Hunter:
        HUNTERS[code] = function
        return function
    return register


FACTORIES = {"zeros", "ones", "empty", "full", "eye", "arange", "linspace", "logspace",
             "rand", "randn", "randint", "randperm", "zeros_like", "ones_like", "empty_like",
             "full_like", "rand_like", "randn_like", "randint_like", "tensor", "Tensor",
             "FloatTensor", "LongTensor", "from_numpy", "as_tensor", "range", "normal",
             "IntTensor", "ByteTensor", "BoolTensor", "DoubleTensor", "HalfTensor"}
CONVERSIONS = {"long", "float", "half", "double", "int", "bool", "byte", "view", "reshape",
               "unsqueeze", "squeeze", "expand", "repeat", "t", "type", "contiguous",
               "requires_grad_", "fill_", "zero_", "uniform_", "normal_", "mul", "add", "div",
               "clone", "detach", "to", "flip", "permute", "transpose", "unsqueeze_"}


FROM_HOST = {"tensor", "from_numpy", "as_tensor"}  # the data is on the host already


def torch_factory(node: ast.AST, aliases: dict[str, str], filled: bool = False) -> bool:
    """A call of a torch tensor factory, perhaps followed by device-independent methods;
    with ``filled``, only one that could have filled the tensor on the device (not a copy
    of host data)."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
            node.func.attr in CONVERSIONS):
        node = node.func.value
    if not isinstance(node, ast.Call):
        return False
    name = qualified(node.func, aliases) or ""
    last = name.rsplit(".", 1)[-1]
    if filled and (last in FROM_HOST or (last.endswith("Tensor") and any(
            isinstance(a, (ast.List, ast.Tuple, ast.ListComp)) for a in node.args))):
        return False
    return name.startswith("torch.") and last in FACTORIES


MODULE_BASE = re.compile(r"Module|Model|Net|Block|Layer|Encoder|Decoder|Head|Norm|"
                         r"Attention|Embedding|Conv|Sequential|Generator|Discriminator", re.I)


def module_class(node: ast.ClassDef) -> bool:
    """Over-approximation of a module class: a base named like one (``nn.Module``,
    ``LightningModule``, ``BaseModel``, ``ResBlock``...), judged by reading."""
    return any(MODULE_BASE.search(text(base)) for base in node.bases)


def init_assignments(tree: ast.AST) -> Iterator[tuple[ast.ClassDef, ast.FunctionDef, ast.stmt]]:
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef) or not module_class(cls):
            continue
        for item in cls.body:
            if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                for node in walk_body(item.body):
                    if isinstance(node, (ast.Assign, ast.AnnAssign)):
                        yield cls, item, node


def self_targets(node: ast.stmt) -> list[ast.Attribute]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [t for t in targets if isinstance(t, ast.Attribute)
            and isinstance(t.value, ast.Name) and t.value.id == "self"]


def layer_call(node: ast.AST, aliases: dict[str, str]) -> bool:
    """A call that may build a layer: ``torch.nn.X(...)`` or a class-like name
    (capitalised), directly or as a list comprehension's element."""
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        node = node.elt
    if isinstance(node, ast.Starred):
        node = node.value
    if not isinstance(node, ast.Call):
        return False
    name = qualified(node.func, aliases) or ""
    last = name.rsplit(".", 1)[-1]
    return name.startswith("torch.nn.") or (last[:1].isupper() and not name.startswith(
        ("PIL.", "Image.", "np.", "numpy.", "torch.", "Path", "pathlib.")))


@hunter("TL101")
def plain_list_of_layers(tree, parents, aliases):
    """self.X = [layer calls...] / [layer call for ...] / list(...) of them / [] then
    self.X.append(layer call) in the __init__ of a module-like class."""
    for cls, init, node in init_assignments(tree):
        for target in self_targets(node):
            value = node.value
            if isinstance(value, (ast.List, ast.Tuple)) and value.elts:
                if any(layer_call(e, aliases) for e in value.elts):
                    yield node
            elif isinstance(value, ast.ListComp) and layer_call(value, aliases):
                yield node
            elif (isinstance(value, ast.Call) and dotted(value.func) == "list" and value.args
                  and layer_call(value.args[0], aliases)):
                yield node
            elif isinstance(value, ast.List) and not value.elts:
                for use in walk_body(init.body):
                    if (method_name(use) in ("append", "extend", "insert")
                            and text(use.func.value) == text(target)
                            and any(layer_call(a, aliases) for a in use.args)):
                        yield node
                        break


def graph_free(expr: ast.AST) -> bool:
    """The expression evidently drops the graph (a Python number or a detached copy)."""
    source = text(expr)
    return any(s in source for s in (".item()", ".detach()", ".data", ".cpu()", ".tolist()",
                                      ".numpy()", "float(", "int(", "len(", "np.", "str(",
                                      "math.", "round("))


LOSSY = re.compile(r"loss|cost|\berr", re.I)


@hunter("TL201")
def loss_appended(tree, parents, aliases):
    """X.append(<something named like a loss>) in a loop, not evidently detached, not
    under no_grad."""
    for node in ast.walk(tree):
        if (method_name(node) == "append" and len(node.args) == 1
                and LOSSY.search(text(node.args[0])) and not graph_free(node.args[0])
                and not isinstance(node.args[0], ast.Constant)
                and in_loop(node, parents) and not under_grad_off(node, parents, aliases)):
            yield node


@hunter("TL202")
def loss_summed(tree, parents, aliases):
    """X += <something named like a loss> (any target) in a loop, not evidently a number,
    not under no_grad."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add)
                and LOSSY.search(text(node.value)) and not graph_free(node.value)
                and in_loop(node, parents) and not under_grad_off(node, parents, aliases)):
            yield node


@hunter("TL301")
def create_then_move(tree, parents, aliases):
    """.cuda() / .to(...) on a fresh torch factory call that could have filled the tensor
    on the device (not torch.tensor/from_numpy of host data), through device-free
    conversions."""
    for node in ast.walk(tree):
        if method_name(node) in ("cuda", "to") and torch_factory(node.func.value, aliases,
                                                                   filled=True):
            if node.func.attr == "to" and node.args and isinstance(node.args[0], ast.Attribute) \
                    and (qualified(node.args[0], aliases) or "").startswith("torch.") \
                    and node.args[0].attr in ("float", "float32", "long", "half", "int64",
                                              "bool", "float16", "bfloat16", "int32", "double"):
                continue  # a dtype conversion, not a move
            if node.func.attr == "to" and not node.args and not keyword(node, "device"):
                continue
            yield node


EVAL_NAME = re.compile(r"^(evaluate|eval|validate|validation|valid|val|test|predict|"
                       r"inference|infer|run_eval|run_test|evaluation)(_\w+)?$", re.I)


def test_file(path: str) -> bool:
    parts = path.split("#")[0].split("/")
    return "tests" in parts or "test" in parts or parts[-1].startswith("test_")


def calls_something(function: ast.AST) -> bool:
    params = {a.arg for a in function.args.args}
    for node in walk_body(function.body):
        if isinstance(node, ast.Call):
            name = dotted(node.func) or ""
            if name in params or re.search(r"(model|net|encoder|decoder)$", name, re.I):
                return True
    return False


def evaluation_functions(tree, aliases) -> Iterator[tuple[ast.AST, bool, bool]]:
    """(function, grad off inside or as decorator, calls .eval()) per evaluation-like one."""
    for node in ast.walk(tree):
        if isinstance(node, FUNCTIONS) and (
                EVAL_NAME.match(node.name) and calls_something(node)):
            grad_off = any((qualified(d.func if isinstance(d, ast.Call) else d, aliases) or "")
                           .endswith(("no_grad", "inference_mode"))
                           for d in node.decorator_list)
            grad_off = grad_off or any(isinstance(n, (ast.With, ast.AsyncWith)) and any(
                grad_off_item(i, aliases) for i in n.items) for n in walk_body(node.body))
            evals = any(method_name(n) == "eval" for n in walk_body(node.body))
            yield node, grad_off, evals


@hunter("TL401")
def inference_without_no_grad(tree, parents, aliases):
    """An evaluation-named function (not a unit test) that calls a model-like callable and
    never turns gradients off inside it or by decorator."""
    for function, grad_off, _ in evaluation_functions(tree, aliases):
        if not grad_off and not under_grad_off(function, parents, aliases):
            yield function


@hunter("TL402")
def inference_without_eval(tree, parents, aliases):
    """An evaluation-named function that turns gradients off but never calls .eval()."""
    for function, grad_off, evals in evaluation_functions(tree, aliases):
        if grad_off and not evals:
            yield function


DROPOUTS = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
            "feature_alpha_dropout"}


@hunter("TL405")
def functional_dropout(tree, parents, aliases):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = qualified(node.func, aliases) or ""
            if (name.startswith("torch.nn.functional.") and name.rsplit(".", 1)[-1] in DROPOUTS
                    and not keyword(node, "training") and len(node.args) < 3):
                yield node


REORDER = {"permute", "transpose", "t", "swapaxes", "swapdims", "movedim", "moveaxis"}


def reorders(expr: ast.AST) -> bool:
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        if expr.func.attr in REORDER:
            return True
        if expr.func.attr in ("contiguous", "reshape", "clone"):
            return False
        expr = expr.func.value
    return isinstance(expr, ast.Attribute) and expr.attr in ("T", "mT")


@hunter("TL501")
def view_after_permute(tree, parents, aliases):
    """.view(...) on a permute/transpose result, chained or through a name bound to one
    earlier in the same function (or module)."""
    scopes = [tree] + [n for n in ast.walk(tree) if isinstance(n, FUNCTIONS)]
    for scope in scopes:
        # name -> (line after which the binding holds, bound to a reordered tensor)
        bound: dict[str, list[tuple[int, bool]]] = defaultdict(list)
        nodes = sorted((n for n in walk_body(scope.body) if hasattr(n, "lineno")),
                       key=lambda n: (n.lineno, n.col_offset))
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                    node.targets[0], ast.Name):
                bound[node.targets[0].id].append((node.end_lineno, reorders(node.value)))
        for node in nodes:
            if method_name(node) == "view" and node.args and not (
                    len(node.args) == 1 and isinstance(node.args[0], ast.Attribute)
                    and node.args[0].attr in ("dtype",)):
                receiver = node.func.value
                if isinstance(receiver, ast.Name):
                    before = [flag for end, flag in bound[receiver.id] if end < node.lineno]
                    if before and before[-1]:
                        yield node
                elif reorders(receiver):
                    yield node


@hunter("TL801")
def data_parallel(tree, parents, aliases):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (qualified(node.func, aliases) or "") in (
                "torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                "torch.nn.parallel.data_parallel.DataParallel"):
            yield node


CONV = re.compile(r"^torch\.nn\.(modules\.conv\.)?Conv(Transpose)?([123])d$")
NORM = re.compile(r"^torch\.nn\.(modules\.batchnorm\.)?(Sync)?BatchNorm([123])?d?$")


def conv_with_bias(node: ast.AST, aliases) -> bool:
    if not isinstance(node, ast.Call) or not CONV.match(qualified(node.func, aliases) or ""):
        return False
    bias = keyword(node, "bias")
    if bias is None:
        return len(node.args) < 8 or not (isinstance(node.args[7], ast.Constant)
                                          and node.args[7].value is False)
    return not (isinstance(bias.value, ast.Constant) and bias.value.value is False)


def batch_norm(node: ast.AST, aliases) -> bool:
    return isinstance(node, ast.Call) and bool(NORM.match(qualified(node.func, aliases) or ""))


@hunter("TL106")
def conv_bias_before_batchnorm(tree, parents, aliases):
    """A biased conv followed by a batch norm: adjacent in a list/Sequential/call args, or
    within the next three statements of the same body."""
    for node in ast.walk(tree):
        seqs = []
        if isinstance(node, (ast.List, ast.Tuple)):
            seqs.append(node.elts)
        if isinstance(node, ast.Call):
            seqs.append(node.args)
        for seq in seqs:
            for first, second in zip(seq, seq[1:]):
                if conv_with_bias(first, aliases) and batch_norm(second, aliases):
                    yield first
        for field in ("body", "orelse"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for i, stmt in enumerate(body):
                value = getattr(stmt, "value", None)
                if isinstance(stmt, ast.Expr) and isinstance(value, ast.Call):
                    value = value.args[-1] if value.args else None  # layers.append(conv)
                if conv_with_bias(value, aliases):
                    later = [n for s in body[i + 1:i + 4] for n in ast.walk(s)]
                    if any(batch_norm(n, aliases) for n in later):
                        yield stmt


@hunter("TL104")
def tensor_attribute(tree, parents, aliases):
    """self.X = torch.<factory>(...) in the __init__ of a module-like class."""
    for cls, init, node in init_assignments(tree):
        if self_targets(node) and node.value is not None and torch_factory(node.value, aliases):
            yield node


@hunter("TL205")
def missing_zero_grad(tree, parents, aliases):
    """A loop or function whose own body calls .backward() and .step() with no zero_grad,
    no `.grad = None` and no `.grad.zero_()` in it (and, for a loop, in the function
    around it)."""
    for node in ast.walk(tree):
        if not isinstance(node, (*LOOPS, *FUNCTIONS)):
            continue
        inner = list(walk_body(node.body))
        names = {method_name(n) for n in inner}
        if not ({"backward", "manual_backward"} & names and "step" in names):
            continue
        if isinstance(node, FUNCTIONS) and any(isinstance(n, LOOPS) for n in inner):
            continue  # the loop inside is the candidate
        scope = enclosing(node, parents, FUNCTIONS) if isinstance(node, LOOPS) else node
        around = list(walk_body(scope.body)) if scope is not None else inner
        source = " ".join(text(n) for n in around if isinstance(n, (ast.Call, ast.Assign)))
        if "zero_grad" in source or re.search(r"\.grad\s*=\s*None|grad\.zero_\(", source):
            continue
        yield node


@hunter("TL108")
def parameter_moved_after_wrap(tree, parents, aliases):
    """<method>(...) called on nn.Parameter(...) (the result is no longer a Parameter)."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Call)
                and (qualified(node.func.value.func, aliases) or "").endswith(
                    ("nn.Parameter", "nn.parameter.Parameter"))):
            yield node


CHECKPOINT_KEYS = re.compile(r"model|net|args|opt|config|cfg|hparams|hyper|ema|optimizer|"
                             r"scheduler|params|state", re.I)


@hunter("TL605")
def load_needs_full_unpickling(tree, parents, aliases):
    """torch.load without weights_only=False whose result is used as a module or read for
    an object-like entry (``['model']``, ``['args']``, ``.args`` ...): the checkpoint may
    hold objects the weights-only unpickler refuses (judged against the repo's saves)."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and qualified(node.func, aliases) == "torch.load"):
            continue
        given = keyword(node, "weights_only")
        if given is not None and isinstance(given.value, ast.Constant) and not given.value.value:
            continue
        yield node


AUTOCASTS = {"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"}


@hunter("TL222")
def autocast_without_device_type(tree, parents, aliases):
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and (qualified(node.func, aliases) or "") in AUTOCASTS
                and not node.args and not keyword(node, "device_type")
                and not any(k.arg is None for k in node.keywords)):
            yield node


# --- running ----------------------------------------------------------------------------

def span(node: ast.AST | tuple[int, int], parents: dict) -> tuple[int, int]:
    if isinstance(node, tuple):
        return node
    if not isinstance(node, (ast.stmt, *FUNCTIONS)):
        node = statement_of(node, parents)
    if isinstance(node, (*FUNCTIONS, *LOOPS, ast.ClassDef)):
        return node.lineno, node.end_lineno
    if isinstance(node, (ast.With, ast.If, ast.Try)):  # a compound statement: its header
        return node.lineno, node.body[0].lineno - 1 if node.body else node.lineno
    return node.lineno, node.end_lineno


def hunt(corpus: Path, repos: list[str], codes: set[str]) -> list[Candidate]:
    found: list[Candidate] = []
    for repo in repos:
        sources = list(iter_sources(corpus, repo))
        trees: dict[str, ast.AST] = {}
        for path, code in sources:
            try:
                trees[path] = ast.parse(code)
            except (SyntaxError, ValueError, RecursionError):
                continue
        by_file: dict[str, list[ast.AST]] = defaultdict(list)
        for path, tree in trees.items():
            by_file[path.split("#")[0]].append(tree)
        lines = {path: code.splitlines() for path, code in sources}
        for path, tree in trees.items():
            aliases = import_aliases(by_file[path.split("#")[0]])
            parents = parents_of(tree)
            if "TL401" in codes or "TL402" in codes:
                skip_eval = test_file(path)
            seen = set()
            for code, function in HUNTERS.items():
                if code not in codes or (code in ("TL401", "TL402") and skip_eval):
                    continue
                for node in function(tree, parents, aliases):
                    first, last = span(node, parents)
                    if (code, first) in seen:
                        continue
                    seen.add((code, first))
                    source = lines[path][first - 1].strip() if first <= len(lines[path]) else ""
                    found.append(Candidate(code, repo, path, first, last, source[:200]))
    return found


def sample(candidates: list[Candidate], size: int, seed: str) -> list[Candidate]:
    if len(candidates) <= size:
        return sorted(candidates, key=lambda c: c.key)

    def rank(candidate: Candidate) -> str:
        return hashlib.sha256(f"{seed}\0{candidate.key}".encode()).hexdigest()

    return sorted(sorted(candidates, key=rank)[:size], key=lambda c: c.key)


def context(corpus: Path, candidate: Candidate, before: int, after: int) -> str:
    name, _, cell = candidate.path.partition("#cell")
    path = corpus / candidate.repo / name
    if cell:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
        cells = data.get("cells") or [c for w in data.get("worksheets", [])
                                      for c in w.get("cells", [])]
        source = cells[int(cell) - 1].get("source", cells[int(cell) - 1].get("input", ""))
        lines = ("".join(source) if isinstance(source, list) else source).splitlines()
    else:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    start = max(0, candidate.line - 1 - before)
    end = min(len(lines), max(candidate.end_line, candidate.line) + after)
    if candidate.end_line - candidate.line > 60:  # a long function: its head and tail
        shown = list(range(start, candidate.line + 40)) + list(range(candidate.end_line - 15,
                                                                     end))
    else:
        shown = list(range(start, end))
    out, previous = [], None
    for n in shown:
        if previous is not None and n != previous + 1:
            out.append("      ...")
        marker = ">" if candidate.line <= n + 1 <= candidate.end_line else " "
        out.append(f"{marker}{n + 1:5}| {lines[n]}")
        previous = n
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--repos", default="", help="comma-separated (default: every folder)")
    parser.add_argument("--select", default="", help="comma-separated codes (default: all)")
    parser.add_argument("--sample", type=int, default=40)
    parser.add_argument("--seed", default="torchlint-recall")
    parser.add_argument("--out", type=Path, help="write the sampled candidates here (TSV)")
    parser.add_argument("--context", type=Path, help="write each sampled candidate's code here")
    args = parser.parse_args()
    repos = [r for r in args.repos.split(",") if r] or sorted(
        p.name for p in args.corpus.iterdir() if p.is_dir())
    codes = {c for c in args.select.split(",") if c} or set(HUNTERS)
    found = hunt(args.corpus, repos, codes)
    by_code: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in found:
        by_code[candidate.code].append(candidate)
    kept = []
    for code in sorted(by_code):
        chosen = sample(by_code[code], args.sample, args.seed)
        kept += chosen
        print(f"{code}\t{len(by_code[code])} candidates\t{len(chosen)} kept", file=sys.stderr)
    if args.out:
        rows = ["code\trepo\tpath\tline\tend_line\tcandidates\tsource"]
        rows += [f"{c.code}\t{c.repo}\t{c.path}\t{c.line}\t{c.end_line}\t"
                 f"{len(by_code[c.code])}\t{c.source}" for c in kept]
        args.out.write_text("\n".join(rows) + "\n", encoding="utf-8")
    if args.context:
        with args.context.open("w", encoding="utf-8") as handle:
            for c in kept:
                handle.write(f"=== {c.code}\t{c.repo}\t{c.path}\t{c.line}\t{c.end_line}\n")
                handle.write(context(args.corpus, c, 6, 4) + "\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
