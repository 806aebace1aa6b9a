"""Training loops (TL204, TL205): optimizer steps, whether gradients are cleared, and
autocast regions."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.bindings import module_value
from torchlint.analysis.context import FileContext
from torchlint.analysis.execution import is_optimizer_name
from torchlint.analysis.nodes import (
    children_of,
    code,
    get_arg,
    is_literal_false,
    iter_nodes,
    last_name_part,
    node_types,
    own_callee,
)
from torchlint.analysis.torch_facts import AUTOCAST_NAMES


def is_autocast_item(ctx: FileContext, item: cst.BaseExpression, with_node: cst.With
                     ) -> bool | None:
    """True: an enabled autocast; False: ``autocast(enabled=False)``; None: not autocast."""

    if isinstance(item, cst.IfExp):
        branches = (is_autocast_item(ctx, item.body, with_node),
                    is_autocast_item(ctx, item.orelse, with_node))
        return True if True in branches else None
    if isinstance(item, cst.Name):
        found = ctx.binding(item.value, with_node)
        if found is not None and found.kind == "assign" and found.value is not None and not (
                isinstance(found.value, cst.Name)):
            return is_autocast_item(ctx, found.value, with_node)
        return None
    if isinstance(item, cst.Call) and isinstance(item.func, cst.Name) and (
            ctx.qualified_name(item.func) not in AUTOCAST_NAMES):
        # ``amp_autocast = partial(torch.autocast, ...)`` / ``ac = torch.autocast``
        found = ctx.binding(item.func.value, with_node)
        factory = found.value if found is not None and found.kind == "assign" else None
        if found is None and ctx.current_function is not None:
            global_ = module_value(ctx, item.func.value)
            factory = global_[1] if global_ is not None else None
        if isinstance(factory, cst.Call) and ctx.qualified_name(
                factory.func) == "functools.partial" and factory.args and (
                    ctx.qualified_name(factory.args[0].value) in AUTOCAST_NAMES):
            enabled = get_arg(factory, "enabled") or get_arg(item, "enabled")
            return not (enabled is not None and is_literal_false(enabled.value))
        if isinstance(factory, (cst.Attribute, cst.Name)) and ctx.qualified_name(
                factory) in AUTOCAST_NAMES:
            item = item.with_changes(func=factory)
    if not isinstance(item, cst.Call) or ctx.qualified_name(item.func) not in AUTOCAST_NAMES:
        return None
    enabled = get_arg(item, "enabled")
    if enabled is not None and is_literal_false(enabled.value):
        return False
    return True


# ------------------------------------------------------------ training loops
def optimizer_step(node: cst.CSTNode) -> str | None:
    """``optimizer.step()`` or ``scaler.step(optimizer)``: the call's source, else None."""

    if type(node) is not cst.Call or type(node.func) is not cst.Attribute:  # type: ignore[attr-defined]
        return None
    if node.func.attr.value != "step":
        return None
    receiver = node.func.value
    if is_optimizer_name(receiver):
        return code(node)
    name = last_name_part(receiver)
    if name is not None and "scaler" in name.lower() and node.args and is_optimizer_name(
            node.args[0].value):
        return code(node)
    return None


def _is_grad_attribute(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == "grad"


_CLEARING_WORDS = ("zero", "clear", "reset", "none", "free", "drop")


def _clearing_functions(ctx: FileContext) -> frozenset[str]:
    """Names of functions and methods in this file whose body clears gradients."""
    return ctx.cached("clearing_functions", lambda: frozenset(
        fn.name.value for fn in ctx.definitions()
        if isinstance(fn, cst.FunctionDef) and any(clears_gradients(n) for n in iter_nodes(fn.body))
    ))


def calls_clearing_helper(ctx: FileContext, node: cst.CSTNode) -> bool:
    """``reset(model)`` / ``self._clear()`` where that function (in this file) clears grads."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and (
            func.value.value in ("self", "cls")):
        func = func.attr
    return isinstance(func, cst.Name) and func.value in _clearing_functions(ctx)


def clears_gradients(node: cst.CSTNode) -> bool:
    """``zero_grad(...)``, ``p.grad = None``, ``p.grad.zero_()``, ``del p.grad``."""
    kind = type(node)  # exact types: asked of every node of many bodies
    if kind is cst.Call:
        name = last_name_part(node.func)
        if name is not None and name.endswith("zero_grad"):
            return True
        lowered = (name or "").lower()
        if "grad" in lowered and any(word in lowered for word in _CLEARING_WORDS):
            return True  # ``self.reset_gradients()``, ``clear_grads(model)``
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in (
                "zero_", "detach_", "fill_"):
            receiver = node.func.value
            while isinstance(receiver, cst.Attribute):
                if receiver.attr.value == "grad":
                    return True
                receiver = receiver.value
        return False
    if kind is cst.Assign:
        return any(_is_grad_attribute(t.target) for t in node.targets)
    if kind is cst.Del:
        return any(_is_grad_attribute(n) for n in iter_nodes(node.target))
    return False


class LoopFacts:
    def __init__(self, step: str, clears: bool, inner_loop_steps: bool) -> None:
        self.step = step
        self.clears = clears
        self.inner_loop_steps = inner_loop_steps


def _backward_and_step(ctx: FileContext, body: cst.CSTNode) -> tuple[bool, str | None, bool]:
    """Does the block call backward(), which optimizer step does it take, does it clear the
    gradients? Once a block: nested loops ask again for their bodies."""
    return ctx.cached(("backward_and_step", id(body)), lambda: _scan_training(ctx, body))


def _scan_training(ctx: FileContext, body: cst.CSTNode) -> tuple[bool, str | None, bool]:
    backward = False
    step: str | None = None
    clears = False
    nodes = list(iter_nodes(body))
    for child in nodes:
        if isinstance(child, cst.Call) and isinstance(child.func, cst.Attribute) and (
                child.func.attr.value == "backward"):
            # distributed autograd keeps gradients per context, nothing to clear
            qual = ctx.qualified_name(child.func)
            backward = backward or not (qual or "").startswith("torch.distributed.")
        step = step or optimizer_step(child)
    if backward and step is not None:  # only then does clearing matter
        clears = any(clears_gradients(child) or calls_clearing_helper(ctx, child)
                     for child in nodes)
    return backward, step, clears


def loop_training_facts(ctx: FileContext, body: cst.CSTNode) -> LoopFacts | None:
    """For a loop body that backpropagates and steps an optimizer: what else it does."""
    backward, step, clears = _backward_and_step(ctx, body)
    if not backward or step is None:
        return None
    inner = False
    for child in iter_nodes(body):
        if isinstance(child, (cst.For, cst.While)):
            inner_backward, inner_step, _ = _backward_and_step(ctx, child.body)
            if inner_backward and inner_step is not None:
                inner = True
                break
    return LoopFacts(step, clears, inner)


def trains(ctx: FileContext, loop: cst.For | cst.While) -> bool:
    """The loop's body (nested blocks and loops included) backpropagates or steps an
    optimizer: a training loop, or an epoch loop around one."""
    backward, step, _ = _backward_and_step(ctx, loop.body)
    return backward or step is not None


# ------------------------------------------------------------ step functions
# Methods a framework calls once per batch (Lightning's manual optimization steps there)
_STEP_HOOKS = frozenset({"training_step"})
_BACKWARD_METHODS = frozenset({"backward", "manual_backward"})
# what a function's straight-line code does not enter
_NOT_STRAIGHT_LINE = node_types(cst.For, cst.While, cst.FunctionDef, cst.Lambda, cst.ClassDef)


def function_step(ctx: FileContext, function: cst.FunctionDef) -> str | None:
    """The optimizer step ``function`` takes after a backward in its own straight-line
    code (not in a loop of its own, which is a loop's business), else None."""
    backward = False
    step: str | None = None
    todo: list[cst.CSTNode] = [function.body]
    while todo:
        node = todo.pop()
        kind = type(node)
        if kind in _NOT_STRAIGHT_LINE:
            continue
        if kind is cst.Call:
            if type(node.func) is cst.Attribute and (  # type: ignore[attr-defined]
                    node.func.attr.value in _BACKWARD_METHODS) and not (  # type: ignore[attr-defined]
                        ctx.qualified_name(node.func) or "").startswith(  # type: ignore[attr-defined]
                            "torch.distributed."):
                backward = True
            step = step or optimizer_step(node)
        todo.extend(children_of(node))
    return step if backward else None


def called_repeatedly(ctx: FileContext, function: cst.FunctionDef,
                      cls: cst.ClassDef | None) -> bool:
    """Is ``function`` run once per batch: called in a loop of the file, handed to another
    call (``Engine(update)``, ``trainer.run(step_fn)``), an ignite-style
    ``update(engine, batch)``, or a ``training_step`` method?"""
    name = function.name.value
    if cls is not None and name in _STEP_HOOKS:
        return True
    params = function.params.params
    if params and params[0].name.value == "engine":
        return True
    uses = ctx.cached("tl205_function_uses", lambda: _function_uses(ctx.module))
    return name in uses


def _function_uses(module: cst.Module) -> frozenset[str]:
    """Names of functions (``f`` or ``self.f``) called inside a loop or passed as an
    argument anywhere in the file."""
    found: set[str] = set()

    def walk(node: cst.CSTNode, in_loop: bool) -> None:
        kind = type(node)
        if kind is cst.Call:
            name = own_callee(node.func)  # type: ignore[attr-defined]
            if in_loop and name is not None:
                found.add(name)
            for arg in node.args:  # type: ignore[attr-defined]
                passed = own_callee(arg.value)
                if passed is not None:
                    found.add(passed)
        elif kind is cst.FunctionDef or kind is cst.Lambda:
            in_loop = False
        loop = kind is cst.For or kind is cst.While
        for child in children_of(node):
            walk(child, in_loop or loop and child is node.body)  # type: ignore[attr-defined]

    walk(module, False)
    return frozenset(found)


def clears_on_the_path(ctx: FileContext, function: cst.FunctionDef,
                       cls: cst.ClassDef | None) -> bool:
    """Are gradients cleared where a call of ``function`` can see it: in the function, the
    functions around it, the other methods of its class, the file's functions that call it
    or that it calls, or the module-level code that names it?"""
    name = function.name.value
    called = {n.value for n in iter_nodes(function.body) if isinstance(n, cst.Name)} | {
        n.attr.value for n in iter_nodes(function.body) if isinstance(n, cst.Attribute)}
    related: list[cst.CSTNode] = [function]
    for other in ctx.definitions():
        if not isinstance(other, cst.FunctionDef) or other is function:
            continue
        inside = any(other is anc for anc in ctx.ancestors)
        methods = cls.body.body if cls is not None else ()
        if inside or any(other is m for m in methods) or other.name.value in called or _names(
                other, name):
            related.append(other)
    top = [s for s in ctx.module.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef))]
    if any(_names(s, name) for s in top):
        related.extend(top)
    return any(clears_gradients(n) or calls_clearing_helper(ctx, n)
               for node in related for n in iter_nodes(node))


def _names(node: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Name) and n.value == name or isinstance(
        n, cst.Attribute) and n.attr.value == name for n in iter_nodes(node))
