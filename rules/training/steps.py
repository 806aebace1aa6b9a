"""Optimizer and scheduler steps (TL213, TL218-TL221): what an optimizer or a
learning-rate scheduler name is bound to in the file, the straight-line statement lists of
function and loop bodies, and the calls that back-propagate."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from torchlint.analysis.bindings import binds_anywhere
from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import (
    get_arg,
    is_literal_false,
    iter_scope,
    last_name_part,
    parameters,
    self_attribute,
    target_names,
)
from torchlint.analysis.torch_facts import BACKWARD_METHODS, NO_GRAD_CONTEXTS
from torchlint.analysis.training_objects import Assignment, assignment_index, text

# the grad-mode context managers (classes: they must be called to be entered)
GRAD_MODE_CLASSES = NO_GRAD_CONTEXTS | frozenset({
    "torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad",
    "torch.autograd.inference_mode",
})
# calls that back-propagate through a graph (besides ``x.backward()``)
AUTOGRAD_CALLS = frozenset({"torch.autograd.grad", "torch.autograd.backward"})
_SCHEDULER_PREFIX = "torch.optim.lr_scheduler."
# a scheduler whose step() takes the metric it reacts to: its order is the user's choice
_METRIC_SCHEDULERS = frozenset({"ReduceLROnPlateau"})


# ------------------------------------------------------------------ expressions
expression_text = text  # an expression's source without whitespace or comments


# -------------------------------------------------------- bindings in the file
def _assignment_index(ctx: FileContext) -> dict[str, list[Assignment]]:
    """The file's assignments (:func:`~torchlint.analysis.training_objects.assignment_index`)
    without ``for`` targets: a loop rebinding a name is judged by ``binds_anywhere``."""
    return ctx.cached("steps_assignment_index", lambda: {
        name: kept for name, entries in assignment_index(ctx).items()
        if (kept := [e for e in entries if e.how != "loop"])})


def assigned_values(ctx: FileContext, expr: cst.BaseExpression
                    ) -> list[cst.BaseExpression] | None:
    """What ``expr`` (a name or ``self.x``) is assigned, seen from the node being visited:
    a name's assignments in the innermost function around it that binds it (or at module
    level), ``self.x``'s assignments in the methods of the enclosing class. None when the
    name is a parameter or bound in a way that cannot be followed (unpacking, a loop or
    ``with`` target), or never assigned."""
    if not isinstance(expr, (cst.Name, cst.Attribute)):
        return None
    entries = _assignment_index(ctx).get(expression_text(expr), [])
    if isinstance(expr, cst.Attribute):
        klass = ctx.enclosing_class()
        if self_attribute(expr) is None or klass is None:
            return None
        entries = [e for e in entries if e.klass is klass]
    else:
        entries = _visible(ctx, expr.value, entries)
    if not entries or any(e.value is None for e in entries):
        return None
    return [e.value for e in entries if e.value is not None]


def _visible(ctx: FileContext, name: str, entries: list[Assignment]) -> list[Assignment]:
    """The assignments of ``name`` in the innermost function around the current node that
    binds it, or at module level; none when that function binds it otherwise (a parameter,
    a loop target, an import)."""
    for function in reversed(ctx.ancestors):
        if not isinstance(function, cst.FunctionDef):
            continue
        local = [e for e in entries if e.function is function]
        if local:
            return local
        if name in {p.name.value for p in parameters(function)} or binds_anywhere(
                function.body, name):
            return []
    return [e for e in entries if e.function is None]


def first_argument(call: cst.Call, keyword: str) -> cst.BaseExpression | None:
    arg = get_arg(call, keyword, 0)
    return arg.value if arg is not None and not arg.star else None


def _optimizer_model(ctx: FileContext, value: cst.BaseExpression) -> str | None:
    """``M`` (as text) for ``torch.optim.X(M.parameters(), ...)``, else None."""
    if not isinstance(value, cst.Call):
        return None
    qual = ctx.qualified_name(value.func) or ""
    if not qual.startswith("torch.optim.") or qual.startswith(_SCHEDULER_PREFIX):
        return None
    if not qual.rsplit(".", 1)[1][:1].isupper():
        return None
    params = first_argument(value, "params")
    if isinstance(params, cst.Call) and isinstance(params.func, cst.Attribute) and (
            params.func.attr.value == "parameters") and not params.args:
        return expression_text(params.func.value)
    return None


def optimizer_model(ctx: FileContext, optimizer: cst.BaseExpression) -> str | None:
    """The model (as text) of the optimizer ``optimizer``: every assignment of it in the
    file is ``torch.optim.X(M.parameters(), ...)`` with the same ``M``."""
    values = assigned_values(ctx, optimizer)
    if not values:
        return None
    models = {_optimizer_model(ctx, value) for value in values}
    if len(models) != 1:
        return None
    return models.pop()


def scheduler_optimizer(ctx: FileContext, scheduler: cst.BaseExpression) -> str | None:
    """The optimizer (as text) a learning-rate scheduler steps: every assignment of
    ``scheduler`` in the file builds a ``torch.optim.lr_scheduler`` class (not one that
    steps on a metric) over the same first argument."""
    values = assigned_values(ctx, scheduler)
    if not values:
        return None
    optimizers: set[str] = set()
    for value in values:
        if not isinstance(value, cst.Call):
            return None
        qual = ctx.qualified_name(value.func) or ""
        if not qual.startswith(_SCHEDULER_PREFIX):
            return None
        leaf = qual[len(_SCHEDULER_PREFIX):]
        if "." in leaf or not leaf[:1].isupper() or leaf in _METRIC_SCHEDULERS:
            return None
        optimizer = first_argument(value, "optimizer")
        if optimizer is None:
            return None
        optimizers.add(expression_text(optimizer))
    return optimizers.pop() if len(optimizers) == 1 else None


# ------------------------------------------------------------ optimizer steps
def stepped_optimizer(node: cst.CSTNode, *, bare: bool = False) -> cst.BaseExpression | None:
    """The optimizer of ``O.step(...)`` or ``scaler.step(O)``; with ``bare``, only a step
    that computes nothing itself (no closure: ``O.step()``, ``scaler.step(O)``)."""
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute) or (
            node.func.attr.value != "step"):
        return None
    receiver = node.func.value
    name = last_name_part(receiver)
    if name is not None and "scaler" in name.lower():
        first = node.args[0] if node.args else None
        if first is None or first.keyword is not None or first.star or (
                bare and len(node.args) != 1):
            return None
        return first.value
    if bare and node.args:
        return None
    return receiver


# ------------------------------------------------------------- backward calls
def is_backward_method(node: cst.CSTNode) -> bool:
    """``x.backward(...)`` (also ``scaler.scale(loss).backward()``)."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and (
        node.func.attr.value == "backward")


def _backprops_directly(ctx: FileContext, node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.Call):
        return False
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in BACKWARD_METHODS:
        return True
    if ctx.qualified_name(node.func) in AUTOGRAD_CALLS:
        return True
    dotted = expression_text(node.func) if isinstance(node.func, (cst.Name, cst.Attribute)) \
        else ""
    return dotted.endswith(("autograd.grad", "autograd.backward"))


def _backprop_functions(ctx: FileContext) -> frozenset[str]:
    """Names of the file's functions and methods that back-propagate, directly or through
    another such function of the file."""
    def compute() -> frozenset[str]:
        functions = [n for n in ctx.definitions() if isinstance(n, cst.FunctionDef)]
        found: set[str] = set()
        changed = True
        while changed:
            changed = False
            for function in functions:
                name = function.name.value
                if name in found:
                    continue
                if any(_backprops_directly(ctx, n) or _calls_named(n, found)
                       for n in iter_scope(function.body)):
                    found.add(name)
                    changed = True
        return frozenset(found)

    return ctx.cached("steps_backprop_functions", compute)


def _calls_named(node: cst.CSTNode, names: set[str] | frozenset[str]) -> bool:
    """``f(...)`` / ``self.f(...)`` for ``f`` in ``names``."""
    if not isinstance(node, cst.Call) or not names:
        return False
    func = node.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and (
            func.value.value in ("self", "cls")):
        func = func.attr
    return isinstance(func, cst.Name) and func.value in names


def backpropagates(ctx: FileContext, node: cst.CSTNode) -> bool:
    """A call that back-propagates: ``x.backward()``, ``self.manual_backward(x)``,
    ``torch.autograd.grad/backward(...)``, or a function of this file that does."""
    return _backprops_directly(ctx, node) or _calls_named(node, _backprop_functions(ctx))


def backprop_calls(ctx: FileContext, node: cst.CSTNode) -> Iterator[cst.Call]:
    """Every back-propagating call in ``node`` (nested functions aside)."""
    for child in iter_scope(node):
        if isinstance(child, cst.Call) and backpropagates(ctx, child):
            yield child


def passes_create_graph(node: cst.CSTNode) -> bool:
    """Some call in ``node`` passes ``create_graph=`` with anything but ``False``."""
    for child in iter_scope(node):
        if isinstance(child, cst.Call):
            arg = get_arg(child, "create_graph")
            if arg is not None and not is_literal_false(arg.value):
                return True
    return False


# ------------------------------------------------------- straight-line statements
def straight_line(body: cst.BaseSuite) -> list[cst.CSTNode]:
    """The statements of a function or loop body in order, the bodies of ``with`` blocks
    read as straight-line code: small statements, and compound statements (``if``,
    ``try``, loops, definitions) as single opaque entries."""
    found: list[cst.CSTNode] = []
    if isinstance(body, cst.SimpleStatementSuite):
        return list(body.body)
    for stmt in body.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            found.extend(stmt.body)
        elif isinstance(stmt, cst.With):
            found.extend(straight_line(stmt.body))
        else:
            found.append(stmt)
    return found


def statement_call(stmt: cst.CSTNode) -> cst.Call | None:
    """The call of an expression statement ``f(...)``."""
    if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
        return stmt.value
    return None


def loop_binds(loop: cst.For | cst.While, name: str) -> bool:
    """``name`` is the loop's target or bound anywhere in its body."""
    if isinstance(loop, cst.For) and name in target_names(loop.target):
        return True
    return binds_anywhere(loop.body, name)
