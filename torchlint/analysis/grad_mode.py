"""Is autograd recording here? ``with`` items and decorators that turn gradients off, and
which functions of a file are only ever called with gradients off.

One ladder answers every rule: :func:`grad_mode_of` says how surely an item turns
gradients off, and each rule picks the rung it needs (a rule that would report a missing
``no_grad`` accepts anything that may turn gradients off; a rule that assumes a graph
exists needs them surely on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.analysis.nodes import code, iter_scope, last_name_part, semantic_children
from torchlint.analysis.torch_facts import NO_GRAD_CONTEXTS, SET_GRAD_ENABLED

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

_EXIT_STACKS = frozenset({"contextlib.ExitStack", "contextlib.AsyncExitStack"})
# Words in a `with` item's source that say it (may) change the grad mode: wrappers such as
# ``maybe_no_grad(cfg)`` or ``self.autocast_and_no_grad()``.
GRAD_MODE_WORDS = ("no_grad", "inference_mode", "set_grad_enabled", "enable_grad")


class GradOff(IntEnum):
    """How surely a ``with`` item or a decorator turns gradients off (higher: surer)."""

    NO = 0  # nothing to do with the grad mode
    MENTIONED = 1  # its source names a grad-mode function: a wrapper that may turn it off
    SWITCHED = 2  # ``torch.set_grad_enabled(...)``: off or on, depending on its argument
    SURELY = 3  # ``torch.no_grad()``, ``torch.inference_mode()`` (not ``inference_mode(False)``)


def grad_off(ctx: FileContext, item: cst.BaseExpression) -> GradOff:
    """How surely ``item`` (a ``with`` item or a decorator) turns gradients off."""
    target = item.func if isinstance(item, cst.Call) else item
    qual = ctx.qualified_name(target)
    if qual in NO_GRAD_CONTEXTS:
        if qual.endswith("inference_mode") and isinstance(item, cst.Call):
            mode = item.args[0].value if item.args else None
            if isinstance(mode, cst.Name) and mode.value == "False":
                return _mentioned(item)
        return GradOff.SURELY
    if qual in SET_GRAD_ENABLED:
        return GradOff.SWITCHED
    return _mentioned(item)


def _mentioned(item: cst.BaseExpression) -> GradOff:
    text = code(item)
    return GradOff.MENTIONED if any(word in text for word in GRAD_MODE_WORDS) else GradOff.NO


def is_no_grad_item(ctx: FileContext, item: cst.BaseExpression) -> bool:
    """``torch.no_grad()`` / ``torch.inference_mode()`` (or without the call, as decorator)."""
    return grad_off(ctx, item) is GradOff.SURELY


def decorated_no_grad(ctx: FileContext, function: cst.FunctionDef,
                      at_least: GradOff = GradOff.SURELY) -> bool:
    """``function`` has a decorator that turns gradients off (at least as surely as given)."""
    return any(grad_off(ctx, d.decorator) >= at_least for d in function.decorators)


def with_grad_off(ctx: FileContext, node: cst.With) -> GradOff:
    """How surely a ``with`` statement's body runs with gradients off: its items, and the
    grad-mode contexts entered on an ``ExitStack`` it opens
    (``with ExitStack() as stack: stack.enter_context(torch.no_grad())``)."""
    found = max((grad_off(ctx, item.item) for item in node.items), default=GradOff.NO)
    for stack in _exit_stacks(ctx, node):
        for call in iter_scope(node.body):
            if type(call) is cst.Call and type(call.func) is cst.Attribute and (  # type: ignore[attr-defined]
                    call.func.attr.value == "enter_context"  # type: ignore[attr-defined]
                    and type(call.func.value) is cst.Name  # type: ignore[attr-defined]
                    and call.func.value.value == stack and call.args):  # type: ignore[attr-defined]
                found = max(found, grad_off(ctx, call.args[0].value))  # type: ignore[attr-defined]
    return found


def _exit_stacks(ctx: FileContext, node: cst.With) -> list[str]:
    """Names bound by ``with contextlib.ExitStack() as name``."""
    names = []
    for item in node.items:
        value = item.item
        if isinstance(value, cst.Call) and ctx.qualified_name(value.func) in _EXIT_STACKS and (
                item.asname is not None and isinstance(item.asname.name, cst.Name)):
            names.append(item.asname.name.value)
    return names


def with_turns_off(ctx: FileContext, node: cst.With, at_least: GradOff) -> bool:
    """The ``with`` statement's body runs with gradients off (at least as surely)."""
    return with_grad_off(ctx, node) >= at_least


def in_no_grad(ctx: FileContext) -> bool:
    """Inside a ``with torch.no_grad():`` body or a function decorated with no_grad."""
    ancestors = ctx.ancestors
    for i in range(len(ancestors) - 2, -1, -1):
        anc = ancestors[i]
        if isinstance(anc, cst.With) and ancestors[i + 1] is anc.body:
            if with_turns_off(ctx, anc, GradOff.SURELY):
                return True
        elif isinstance(anc, cst.FunctionDef):
            return decorated_no_grad(ctx, anc)
        elif isinstance(anc, (cst.Lambda, cst.ClassDef)):
            return False
    return False


@dataclass
class CallSites:
    """For each called name, the grad mode of every call: the surest item or decorator
    turning gradients off around the call, within its own function."""

    # callee ``f`` of ``f(...)``, ``self.f(...)`` or ``cls.f(...)``
    by_name: dict[str, list[GradOff]] = field(default_factory=dict)
    # last part of any callee: ``f`` of ``obj.helper.f(...)`` too
    by_last_part: dict[str, list[GradOff]] = field(default_factory=dict)


def call_sites(ctx: FileContext) -> CallSites:
    """Every call of the file with the grad mode it runs in; scanned once a file."""
    return ctx.cached("grad_mode_call_sites", lambda: _scan_calls(ctx))


def _scan_calls(ctx: FileContext) -> CallSites:
    sites = CallSites()
    stack: list[tuple[cst.CSTNode, GradOff]] = [(ctx.module, GradOff.NO)]
    while stack:
        node, mode = stack.pop()
        kind = type(node)  # exact types: an isinstance against libcst's ABCs is slow here
        if kind is cst.Call:
            func = node.func  # type: ignore[attr-defined]
            last = last_name_part(func)
            if last is not None:
                sites.by_last_part.setdefault(last, []).append(mode)
            if type(func) is cst.Attribute and type(func.value) is cst.Name and (
                    func.value.value in ("self", "cls")):
                func = func.attr
            if type(func) is cst.Name:
                sites.by_name.setdefault(func.value, []).append(mode)
        elif kind is cst.FunctionDef:
            # a function's body runs in its callers' mode: only its decorators count
            mode = max((grad_off(ctx, d.decorator) for d in node.decorators),  # type: ignore[attr-defined]
                       default=GradOff.NO)
        elif kind is cst.With:
            inner = max(mode, with_grad_off(ctx, node))
            stack.extend((item, mode) for item in node.items)
            stack.append((node.body, inner))
            continue
        stack.extend((child, mode) for child in semantic_children(node))
    return sites


def called_only_with_grad_off(ctx: FileContext, name: str,
                              at_least: GradOff = GradOff.SWITCHED) -> bool:
    """``name`` is called in this file, and every call runs with gradients off
    (``with torch.no_grad(): val_loss = evaluate(model, loader)``)."""
    calls = call_sites(ctx).by_name.get(name, [])
    return bool(calls) and all(mode >= at_least for mode in calls)


def called_with_grad_off(ctx: FileContext, last_part: str,
                         at_least: GradOff = GradOff.MENTIONED) -> bool:
    """Some call whose callee ends in ``last_part`` runs with gradients (maybe) off."""
    return any(mode >= at_least for mode in call_sites(ctx).by_last_part.get(last_part, ()))
