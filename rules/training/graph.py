"""Graph values for the training rules (TL201, TL202): expressions that hold an autograd
graph in a training step (the result of a loss call, of a model call, or a name bound from
one of those), whether gradients are surely on, and whether the graph is wanted.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from torchlint.analysis.bindings import bindings_before, binds_anywhere, module_value
from torchlint.analysis.context import FileContext
from torchlint.analysis.grad_mode import (
    GradOff,
    called_only_with_grad_off,
    decorated_no_grad,
    in_no_grad,
    with_turns_off,
)
from torchlint.analysis.nodes import (
    dotted_name,
    iter_nodes,
    iter_scope,
    last_name_part,
    self_attribute,
)
from torchlint.analysis.spelling import reads_as_graph_output
from torchlint.analysis.torch_facts import (
    BACKWARD_METHODS,
    is_layer_call,
    is_loss_call,
    is_loss_class,
    is_model_name,
    may_be_torch,
)

# methods that keep the graph of a loss (``loss.mean()``)
_GRAPH_KEEPING_METHODS = frozenset({"mean", "sum", "squeeze", "view", "reshape", "float",
                                    "double", "half", "clone", "abs", "to", "cuda", "cpu"})
# methods that leave a fresh tensor a tensor (``torch.zeros(1).squeeze_()``)
_SAME_TENSOR_METHODS = frozenset({"squeeze", "squeeze_", "to", "cuda", "float", "double",
                                  "half"})
# tensor attributes that carry no graph (``loss.data``, ``out.shape[0]``)
_GRAPHLESS_ATTRIBUTES = frozenset({"data", "shape", "grad", "device", "dtype", "ndim",
                                   "is_cuda", "requires_grad", "grad_fn", "is_leaf", "names",
                                   "layout"})
_CONTAINER_HINTS = ("dict", "list", "losses", "map", "values", "terms", "items")
_CONTAINER_FACTORIES = frozenset({"builtins.dict", "builtins.list", "collections.defaultdict",
                                  "collections.Counter", "collections.OrderedDict"})
_LIGHTNING_NO_GRAD_HOOKS = ("validation_step", "test_step", "predict_step", "on_validation",
                            "on_test", "on_predict", "validation_epoch_end", "test_epoch_end")


# ---------------------------------------------------------------- bindings
def last_assignment(ctx: FileContext, name: str, at: cst.CSTNode | None = None
                    ) -> cst.BaseExpression | None:
    """Right-hand side of the last ``name = value`` before ``at`` in straight-line code."""
    chain = assignment_chain(ctx, name, at)
    return chain[0] if chain else None


def assignment_chain(ctx: FileContext, name: str, at: cst.CSTNode | None = None,
                     limit: int = 4) -> list[cst.BaseExpression]:
    """Values ``name`` was assigned before ``at`` in straight-line code, latest first.

    Reads ``loss, out = model(x)`` as ``loss`` bound from that call, sees through
    ``loss /= k``, and goes on past ``loss = loss / k`` to the earlier value. A value
    computed inside a ``with`` block that turns gradients off (or may) has no graph: the
    search stops there, as at any binding it cannot follow.
    """
    chain: list[cst.BaseExpression] = []

    def keeps_graph(node: cst.With) -> bool:
        return not with_turns_off(ctx, node, GradOff.SWITCHED)

    for found in bindings_before(ctx, name, at, into_with=keeps_graph):
        if found.kind == "augmented":
            continue  # ``loss /= steps`` keeps what ``loss`` was
        value = found.value
        if found.kind == "unpack":
            # ``total, correct = 0, 0``: the element that binds the name
            element = _literal_element(found.node, name)
            if element is not None:
                value = element
            elif not (isinstance(value, cst.Call) and _unpacked_graph_element(found.node, name)):
                break
        if found.kind not in ("assign", "unpack") or value is None:
            break
        chain.append(value)
        if len(chain) >= limit or not _mentions_name(value, name):
            break
    return chain


def _unpacked_graph_element(assign: cst.CSTNode, name: str) -> bool:
    """``name, a = call(...)`` or ``a, name_loss = call(...)``: the name is an element of the
    tuple target itself, and the one a model or criterion returns its graph in: the first
    element, or one named as a loss or an output. The others are what such calls return
    beside it: a criterion's token count (``loss, sample_size, log = criterion(...)``), a
    pooling ratio, a hidden state, which the call's kind says nothing about."""
    assert isinstance(assign, cst.Assign)
    target = assign.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)):
        return False
    for index, element in enumerate(target.elements):
        if isinstance(element.value, cst.Name) and element.value.value == name:
            return index == 0 or reads_as_graph_output(name)
    return False


def _literal_element(assign: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    """In ``a, name = x, y`` (a tuple or list on both sides, no starred element, the same
    length), the value that ``name`` receives: ``y``."""
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target, value = assign.targets[0].target, assign.value
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))):
        return None
    names, values = target.elements, value.elements
    if len(names) != len(values) or any(
            isinstance(e, cst.StarredElement) for e in (*names, *values)):
        return None
    for element, bound in zip(names, values):
        if isinstance(element.value, cst.Name) and element.value.value == name:
            return bound.value
    return None


def _mentions_name(node: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Name) and n.value == name for n in iter_nodes(node))


# ------------------------------------------------------------- graph values
def is_model_call(ctx: FileContext, node: cst.CSTNode) -> bool:
    """``model(x)``, ``self.net(x)``, ``Net()(x)``, or a name bound to a module-class instance."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Call):
        return is_layer_call(ctx, func)
    qual = ctx.qualified_name(func)
    if qual is not None:
        return False
    name = last_name_part(func)
    if name is None:
        return False
    if is_model_name(name, ctx.options.model_names):
        return may_be_torch(ctx, func, node)
    built = _instance_of(ctx, func)
    return built is not None and is_layer_call(ctx, built)


def self_attribute_values(ctx: FileContext, node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """Values assigned to ``self.X`` anywhere in the enclosing class, for a ``self.X`` node."""
    name = self_attribute(node)
    cls = ctx.enclosing_class() if name is not None else None
    if cls is None:
        return []
    by_attribute = ctx.cached(("self_attribute_values", id(cls)),
                              lambda: _self_attribute_values(cls))
    return list(by_attribute.get(name, ()))


def _self_attribute_values(cls: cst.ClassDef) -> dict[str, list[cst.BaseExpression]]:
    """Every ``self.X = value`` (also annotated or augmented) in a class, by X."""
    values: dict[str, list[cst.BaseExpression]] = {}
    for stmt in iter_nodes(cls):
        if isinstance(stmt, cst.Assign):
            for target in stmt.targets:
                attr = self_attribute(target.target)
                if attr is not None:
                    values.setdefault(attr, []).append(stmt.value)
        elif isinstance(stmt, (cst.AnnAssign, cst.AugAssign)):
            attr = self_attribute(stmt.target)
            if attr is not None:
                values.setdefault(attr, []).append(stmt.value)
    return values


def _instance_of(ctx: FileContext, func: cst.BaseExpression) -> cst.BaseExpression | None:
    """What the called object was built from: ``crit`` after ``crit = nn.L1Loss()``."""
    if isinstance(func, cst.Name):
        if (value := last_assignment(ctx, func.value)) is not None:
            return value
        found = module_value(ctx, func.value) if ctx.current_function is not None else None
        return found[1] if found is not None else None
    values = self_attribute_values(ctx, func)
    if len(values) == 1:
        return values[0]
    return None


def is_loss_value_call(ctx: FileContext, node: cst.CSTNode) -> bool:
    """:func:`is_loss_call`, also for instances bound earlier or stored on ``self``."""
    if is_loss_call(ctx, node):
        return True
    if not isinstance(node, cst.Call) or ctx.qualified_name(node.func) is not None:
        return False
    built = _instance_of(ctx, node.func)
    if isinstance(built, cst.Call):
        qual = ctx.qualified_name(built.func)
        return qual is not None and is_loss_class(qual)
    return False


def is_graph_call(ctx: FileContext, node: cst.CSTNode) -> bool:
    return is_loss_value_call(ctx, node) or is_model_call(ctx, node)


def _graph_derived(ctx: FileContext, node: cst.BaseExpression, depth: int = 0,
                   env: dict[str, list[cst.BaseExpression]] | None = None) -> bool:
    """A loss-named value built from a graph call: ``out.loss``, ``out[0]``, ``a + b``..."""
    if depth > 6:
        return False
    env = env or {}
    if is_graph_call(ctx, node):
        return True
    if isinstance(node, cst.Attribute) and node.attr.value in _GRAPHLESS_ATTRIBUTES:
        return False
    if isinstance(node, (cst.Attribute, cst.Subscript)):
        return _graph_derived(ctx, node.value, depth + 1, env)
    if isinstance(node, cst.BinaryOperation):
        return _graph_derived(ctx, node.left, depth + 1, env) or _graph_derived(
            ctx, node.right, depth + 1, env)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and (
            node.func.attr.value in _GRAPH_KEEPING_METHODS):
        return _graph_derived(ctx, node.func.value, depth + 1, env)
    if isinstance(node, cst.Name):
        chain = env[node.value] if node.value in env else assignment_chain(ctx, node.value)
        if not chain:
            return False
        return _graph_derived(ctx, chain[0], depth + 1, {**env, node.value: chain[1:]})
    return False


def _is_loss_key(node: cst.BaseExpression) -> bool:
    """``"loss"``, ``'total_loss'``: a string subscript naming a loss."""
    from torchlint.analysis.nodes import string_value

    text = string_value(node)
    return text is not None and "loss" in text.lower()


def graph_value(ctx: FileContext, node: cst.BaseExpression, depth: int = 0,
                env: dict[str, list[cst.BaseExpression]] | None = None) -> str | None:
    """Why ``node`` holds a graph: "loss" (a scalar loss), "model" (a model output), or None.

    Follows names back through straight-line assignments (``errD = errD_real + errD_fake``),
    reads ``outputs.loss`` / ``out["loss"]`` of a model output as a loss, and sees through
    methods that keep the graph (``loss.mean()``, ``loss.float()``).
    """
    if depth > 6:
        return None
    env = env or {}
    if isinstance(node, cst.NamedExpr):
        return graph_value(ctx, node.value, depth + 1, env)
    if isinstance(node, cst.Call) and returns_no_graph(ctx, node.func):
        return None  # a function of this file returning a number (``eval_loss`` -> float)
    if is_loss_value_call(ctx, node):
        return "loss"
    if is_model_call(ctx, node):
        return "model"
    if isinstance(node, cst.BinaryOperation) and isinstance(
            node.operator, (cst.Multiply, cst.Divide, cst.Add, cst.Subtract)):
        sides = (graph_value(ctx, node.left, depth + 1, env),
                 graph_value(ctx, node.right, depth + 1, env))
        return "loss" if "loss" in sides else None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and (
            node.func.attr.value in _GRAPH_KEEPING_METHODS):
        inner = graph_value(ctx, node.func.value, depth + 1, env)
        return "loss" if inner == "loss" else None
    if isinstance(node, cst.Attribute):
        # ``outputs.loss`` of a Hugging Face / Lightning style model output
        if "loss" in node.attr.value.lower() and _graph_derived(ctx, node.value, depth + 1, env):
            return "loss"
        return None
    if isinstance(node, cst.Subscript):
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) and (
                _is_loss_key(node.slice[0].slice.value)) and _graph_derived(
                    ctx, node.value, depth + 1, env):
            return "loss"
        return None
    if not isinstance(node, cst.Name):
        return None
    if not env and backpropagated_here(ctx, node.value):
        return "loss"
    chain = env[node.value] if node.value in env else assignment_chain(ctx, node.value)
    if not chain:
        return None
    lowered = node.value.lower()
    if "loss" in lowered:
        if not _graph_derived(ctx, node, depth, env):
            return None
        # ``loss_dict = model(images, targets)``: graphs, but no scalar to take .item() of
        return "model" if any(part in lowered for part in _CONTAINER_HINTS) else "loss"
    return graph_value(ctx, chain[0], depth + 1, {**env, node.value: chain[1:]})


def backpropagated_here(ctx: FileContext, name: str) -> bool:
    """Was ``name.backward()`` called earlier in the block of the current statement, with
    ``name`` not bound anew since (``loss *= k`` keeps it)? Backward needs a graph, so the
    value still holds one (``loss = loss_fn(out, y); loss.backward(); total += loss``)."""
    ancestors = ctx.ancestors
    for index in range(len(ancestors) - 1, 0, -1):
        statement, block = ancestors[index], ancestors[index - 1]
        if isinstance(block, (cst.IndentedBlock, cst.Module)):
            break
    else:
        return False
    body = list(block.body)
    if not any(s is statement for s in body):
        return False
    for stmt in reversed(body[:next(k for k, s in enumerate(body) if s is statement)]):
        if not isinstance(stmt, cst.SimpleStatementLine):
            if binds_anywhere(stmt, name):
                return False
            continue
        for small in reversed(stmt.body):
            if isinstance(small, cst.Expr) and _backward_of(small.value, name):
                return True
            if isinstance(small, cst.AugAssign):
                continue
            if binds_anywhere(small, name):
                return False
    return False


def _backward_of(node: cst.BaseExpression, name: str) -> bool:
    """``name.backward(...)``."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and (
        node.func.attr.value == "backward") and isinstance(node.func.value, cst.Name) and (
        node.func.value.value == name)


# --------------------------------------------------------- where graphs live
def grad_surely_enabled(ctx: FileContext) -> bool:
    """Not inside no_grad/inference_mode, set_grad_enabled, or a Lightning no-grad hook."""
    function = ctx.current_function
    if in_no_grad(ctx) or function is not None and called_only_with_grad_off(
            ctx, function.name.value):
        return False
    ancestors = ctx.ancestors
    for i in range(len(ancestors) - 2, -1, -1):
        anc = ancestors[i]
        if isinstance(anc, cst.With) and ancestors[i + 1] is anc.body:
            if with_turns_off(ctx, anc, GradOff.SWITCHED):
                return False
        if isinstance(anc, cst.FunctionDef):
            if anc.name.value.startswith(_LIGHTNING_NO_GRAD_HOOKS) and ctx.in_module_class():
                return False
            if anc.name.value == "forward" and ctx.in_module_class():
                return False
            break
    return True


def mentioned_names(node: cst.CSTNode) -> Iterator[str]:
    """Dotted names (``losses``, ``self.losses``) read anywhere in ``node``."""
    for child in iter_nodes(node):
        if isinstance(child, (cst.Name, cst.Attribute)):
            dotted = dotted_name(child)
            if dotted is not None:
                yield dotted


def _mentions(node: cst.CSTNode, names: set[str]) -> bool:
    return any(n in names for n in mentioned_names(node))


def _targets(stmt: cst.CSTNode) -> list[str]:
    if isinstance(stmt, cst.Assign):
        exprs = [t.target for t in stmt.targets]
    elif isinstance(stmt, (cst.AugAssign, cst.AnnAssign)):
        exprs = [stmt.target]
    else:
        return []
    names = []
    for expr in exprs:
        for child in iter_nodes(expr):
            if isinstance(child, (cst.Name, cst.Attribute)):
                dotted = dotted_name(child)
                if dotted is not None:
                    names.append(dotted)
    return names


def iterates_data(loop: cst.For | cst.While | None) -> bool:
    """``for x, y in train_loader`` / ``enumerate(tqdm(self.val_dataloader()))``."""
    if not isinstance(loop, cst.For):
        return False
    for dotted in mentioned_names(loop.iter):
        leaf = dotted.rsplit(".", 1)[-1].lower()
        if "loader" in leaf or "dataset" in leaf or "batches" in leaf:
            return True
    return False


def graph_is_wanted(scope: cst.CSTNode, name: str, data_loop: bool = False) -> bool:
    """``name`` (or a value computed from it in ``scope``) is backpropagated or returned.

    Returning it counts only when the function does no backward of its own and the loop
    (``data_loop``) does not walk a data loader: a helper that builds loss terms.
    """
    derived = {name}
    # a module's own code (a script, a notebook): its functions and classes bind local names
    walk = iter_scope if isinstance(scope, cst.Module) else iter_nodes
    statements = [n for n in walk(scope)
                  if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign))]
    changed = True
    while changed:
        changed = False
        for stmt in statements:
            value = stmt.value
            if value is None or not _mentions(value, derived):
                continue
            for target in _targets(stmt):
                if target not in derived:
                    derived.add(target)
                    changed = True
    returned = False
    backprop_here = False
    for node in walk(scope):
        if isinstance(node, (cst.Return, cst.Yield)) and node.value is not None:
            returned = returned or _mentions(node.value, derived)
        if isinstance(node, cst.Call):
            func = node.func
            called = last_name_part(func)
            if called in BACKWARD_METHODS or called == "grad" and dotted_name(func) in (
                    "torch.autograd.grad", "autograd.grad", "grad"):
                backprop_here = True
                if _mentions(node, derived):
                    return True
    # a helper that builds loss terms and hands them back: the caller backpropagates
    return returned and not backprop_here and not data_loop


def rebinds(body: cst.CSTNode, holder: str) -> bool:
    """Does ``body`` bind ``holder`` (a name, or ``self.X``) anew?"""
    if "." not in holder:
        return binds_anywhere(body, holder)
    for node in iter_scope(body):
        if isinstance(node, (cst.Assign, cst.AnnAssign)):
            targets = node.targets if isinstance(node, cst.Assign) else [node]
            if any(dotted_name(t.target) == holder for t in targets):
                return True
    return False


def function_scope(ctx: FileContext) -> cst.CSTNode:
    """The innermost function around the current node, or the module."""
    return ctx.current_function or ctx.module


def item_call(value: cst.BaseExpression, ctx: FileContext | None = None) -> str:
    """Source of ``value.item()``, parenthesised when needed."""
    from torchlint.analysis.nodes import code

    inner = value
    if not isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not (
            value.lpar):
        inner = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    call = cst.Call(func=cst.Attribute(value=inner, attr=cst.Name("item")))
    return ctx.code(call) if ctx is not None else code(call)


def item_suggestion(value: cst.BaseExpression) -> str:
    """``loss.item()`` / ``(loss * n).item()`` for a message, on one line."""
    bare = value.with_changes(lpar=[], rpar=[]) if value.lpar else value
    text = shown(bare)
    if isinstance(bare, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        return f"{text}.item()"
    return f"({text}).item()"


def shown(value: cst.BaseExpression) -> str:
    """One-line source of ``value`` for a message: outer parentheses and line breaks dropped."""
    from torchlint.analysis.nodes import code

    if value.lpar:
        value = value.with_changes(lpar=[], rpar=[])
    text = code(value)
    if "\n" in text:
        lines = [line.split("#", 1)[0].strip() if "#" in line and "'" not in line
                 and '"' not in line else line.strip() for line in text.splitlines()]
        text = " ".join(line for line in lines if line)
        text = text.replace("( ", "(").replace(" )", ")").replace("[ ", "[").replace(" ]", "]")
    return text


def is_number_or_tensor(ctx: FileContext, value: cst.BaseExpression | None) -> bool:
    """``0``, ``0.0``, ``-1``, ``torch.zeros(1)``, ``torch.tensor(0.0, device=d)``."""
    from torchlint.analysis.torch_facts import is_tensor_factory

    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    if isinstance(value, cst.Call):
        qual = ctx.qualified_name(value.func)
        if qual is None and isinstance(value.func, cst.Attribute) and (
                value.func.attr.value in _SAME_TENSOR_METHODS):
            # ``torch.zeros(1, device=d).squeeze_()``: still the fresh tensor
            return isinstance(value.func.value, cst.Call) and is_tensor_factory(
                ctx, value.func.value)
        return is_tensor_factory(ctx, value) or qual in ("builtins.float", "builtins.int")
    return False


def is_container(ctx: FileContext, value: cst.BaseExpression | None) -> bool:
    """``{}``, ``[]``, ``dict(...)``, ``defaultdict(float)``, ``Counter()``: a container
    whose entries a total can be kept in."""
    if isinstance(value, (cst.Dict, cst.List, cst.DictComp, cst.ListComp)):
        return True
    if isinstance(value, cst.Call):
        return ctx.qualified_name(value.func) in _CONTAINER_FACTORIES
    return False


def returns_no_graph(ctx: FileContext, func: cst.BaseExpression) -> bool:
    """``func`` names a function of this file that gives back no graph: it runs under
    ``no_grad``, or each of its returns is a Python number (``.item()``, ``float(...)``,
    literals, and names only ever bound to such, combined by arithmetic)."""
    if not isinstance(func, cst.Name):
        return False
    functions = _local_functions(ctx).get(func.value)
    # a name defined twice (a notebook's redefined helper, one per branch) may be either
    return bool(functions) and all(_returns_number(ctx, f) for f in functions)


def _returns_number(ctx: FileContext, function: cst.FunctionDef) -> bool:
    if decorated_no_grad(ctx, function):
        return True
    returns = [n for n in iter_scope(function.body) if isinstance(n, cst.Return)]
    numbers = _number_names(function)
    return bool(returns) and all(
        r.value is not None and _is_number(r.value, numbers) for r in returns)


def _local_functions(ctx: FileContext) -> dict[str, list[cst.FunctionDef]]:
    """The file's functions (and methods) by name, every definition of each name."""
    def index() -> dict[str, list[cst.FunctionDef]]:
        found: dict[str, list[cst.FunctionDef]] = {}
        for node in ctx.definitions():
            if isinstance(node, cst.FunctionDef):
                found.setdefault(node.name.value, []).append(node)
        return found
    return ctx.cached("local_functions", index)


def _number_names(function: cst.FunctionDef) -> set[str]:
    """Names every binding of which (in the function) is a Python number."""
    good: set[str] = set()
    bad: set[str] = set()
    for node in iter_scope(function.body):
        if isinstance(node, (cst.Assign, cst.AugAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, cst.Assign) else [node]
            for target in targets:
                name = target.target
                if isinstance(name, cst.Name):
                    (good if _is_number(node.value, set()) else bad).add(name.value)
    changed = True
    while changed:  # a = b / n where b is a number name
        changed = False
        for node in iter_scope(function.body):
            if isinstance(node, (cst.Assign, cst.AugAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, cst.Assign) else [node]
                for target in targets:
                    name = target.target
                    if isinstance(name, cst.Name) and name.value in bad and _is_number(
                            node.value, good - bad) and all(
                            _is_number(v, good) for v in _values_of(function, name.value)):
                        bad.discard(name.value)
                        good.add(name.value)
                        changed = True
    return good - bad


def _values_of(function: cst.FunctionDef, name: str) -> list[cst.BaseExpression]:
    values = []
    for node in iter_scope(function.body):
        if isinstance(node, (cst.Assign, cst.AugAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, cst.Assign) else [node]
            if any(isinstance(t.target, cst.Name) and t.target.value == name for t in targets):
                values.append(node.value)
    return values


def _is_number(expr: cst.BaseExpression, numbers: set[str]) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in numbers
    if isinstance(expr, cst.UnaryOperation):
        return _is_number(expr.expression, numbers)
    if isinstance(expr, cst.BinaryOperation):
        return _is_number(expr.left, numbers) and _is_number(expr.right, numbers) or (
            _is_number(expr.left, numbers) and _is_len(expr.right)) or (
            _is_len(expr.left) and _is_number(expr.right, numbers))
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value == "item":
            return True
        return isinstance(func, cst.Name) and func.value in ("float", "int", "round")
    return False


def _is_len(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and (
        expr.func.value == "len") or isinstance(expr, (cst.Integer, cst.Float))
