"""Activations flowing into losses (TL214-TL217): softmax and sigmoid outputs, the
loss-input argument of a functional loss or of a loss instance, and whether a producer
flows into it.

- a **softmax output** is a call of ``torch.softmax`` / ``F.softmax`` (any alias), a
  method call ``E.softmax(...)``, or a call of a name or ``self.X`` bound in the file to
  ``nn.Softmax(...)``; a **sigmoid output** likewise (``torch.sigmoid``, ``F.sigmoid``,
  ``E.sigmoid()``, an ``nn.Sigmoid()`` instance);
- the **loss input** is the first positional argument (or ``input=``) of the functional
  loss, or of a call of an instance of the loss class; the target is never looked at;
- a producer **flows into** the loss input when it is the argument itself, or a name bound
  to it earlier in the same scope with no rebinding in between.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from torchlint.analysis.bindings import module_value
from torchlint.analysis.context import FileContext
from torchlint.analysis.imports import index_for
from torchlint.analysis.nodes import code, get_arg, has_star_args
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import import_cleanup, keeps_comments
from torchlint.rule import Rule
from torchlint.rules.training.graph import self_attribute_values

SOFTMAX = "softmax"
SIGMOID = "sigmoid"

_FUNCTIONS = {
    "torch.softmax": SOFTMAX,
    "torch.nn.functional.softmax": SOFTMAX,
    "torch.sigmoid": SIGMOID,
    "torch.nn.functional.sigmoid": SIGMOID,
}
_LAYERS = {"torch.nn.Softmax": SOFTMAX, "torch.nn.Sigmoid": SIGMOID}
# methods that return the module or tensor they are called on (``nn.BCELoss().cuda()``)
_SAME_OBJECT_METHODS = frozenset({"to", "cuda", "cpu"})


@dataclass(frozen=True)
class Loss:
    """One loss, in its two spellings: ``torch.nn.functional.cross_entropy`` and
    ``torch.nn.CrossEntropyLoss``."""

    function: str
    layer: str


CROSS_ENTROPY = Loss("torch.nn.functional.cross_entropy", "torch.nn.CrossEntropyLoss")
NLL = Loss("torch.nn.functional.nll_loss", "torch.nn.NLLLoss")
BCE_WITH_LOGITS = Loss("torch.nn.functional.binary_cross_entropy_with_logits",
                       "torch.nn.BCEWithLogitsLoss")
BCE = Loss("torch.nn.functional.binary_cross_entropy", "torch.nn.BCELoss")


@dataclass(frozen=True)
class Producer:
    """A softmax or sigmoid output: the call, how it is spelled (``function``: a torch
    function; ``method``: ``x.softmax(1)``; ``layer``: an ``nn.Softmax`` instance called),
    and the tensor it normalises (None when that is not a plain argument)."""

    kind: str
    call: cst.Call
    form: str
    tensor: cst.BaseExpression | None


@dataclass(frozen=True)
class Flow:
    """A producer flowing into a loss input: ``direct`` when it is the argument itself."""

    producer: Producer
    direct: bool


def producer(ctx: FileContext, expr: cst.BaseExpression, at: cst.CSTNode | None = None
             ) -> Producer | None:
    """The softmax or sigmoid output ``expr`` is, if it is one (``at``: where names used
    by ``expr`` are looked up, default the node being visited)."""
    if type(expr) is not cst.Call:
        return None
    func = expr.func
    qual = ctx.qualified_name(func)
    kind = _FUNCTIONS.get(qual or "")
    if kind is not None:
        return Producer(kind, expr, "function", _input_tensor(expr))
    if qual is not None:
        return None
    if type(func) is cst.Attribute and func.attr.value in (SOFTMAX, SIGMOID) and (
            func.attr.value == SOFTMAX or not expr.args) and _may_be_tensor(ctx, func.value):
        return Producer(func.attr.value, expr, "method", func.value)
    kind = _LAYERS.get(instance_class(ctx, func, at) or "")
    if kind is not None:
        return Producer(kind, expr, "layer", _input_tensor(expr))
    return None


def _input_tensor(call: cst.Call) -> cst.BaseExpression | None:
    if has_star_args(call):
        return None
    arg = get_arg(call, "input", 0)
    return arg.value if arg is not None else None


def _may_be_tensor(ctx: FileContext, receiver: cst.BaseExpression) -> bool:
    """The receiver of ``E.softmax(...)`` may be a tensor: not ``self`` (a module's own
    attribute is looked up as a layer instead) and not an imported name (a project's own
    module, imported relatively, does not resolve)."""
    if type(receiver) is cst.Name:
        return receiver.value not in ("self", "cls") and not index_for(ctx).imports.get(
            receiver.value)
    return True


def instance_class(ctx: FileContext, obj: cst.BaseExpression, at: cst.CSTNode | None = None
                   ) -> str | None:
    """The class (qualified name) ``obj`` is an instance of, as far as this file shows it:
    a constructor call (``nn.CrossEntropyLoss()``), a name bound to one earlier in the
    scope or once at module level, or a ``self.X`` every assignment in the class binds to
    one. ``.to(...)``, ``.cuda()`` and ``.cpu()`` on the instance are seen through."""
    if type(obj) is cst.Call:
        return _constructed(ctx, obj)
    if type(obj) is cst.Name:
        bound = ctx.binding(obj.value, at)
        if bound is not None:
            return _constructed(ctx, bound.value) if bound.kind == "assign" else None
        found = module_value(ctx, obj.value) if ctx.current_function is not None else None
        return _constructed(ctx, found[1]) if found is not None else None
    values = self_attribute_values(ctx, obj)
    classes = {_constructed(ctx, value) for value in values}
    if len(classes) == 1:
        return classes.pop()
    return None


def _constructed(ctx: FileContext, value: cst.BaseExpression | None) -> str | None:
    while type(value) is cst.Call and type(value.func) is cst.Attribute and (
            value.func.attr.value in _SAME_OBJECT_METHODS):
        value = value.func.value
    if type(value) is not cst.Call:
        return None
    return ctx.qualified_name(value.func)


def loss_input(ctx: FileContext, call: cst.Call, loss: Loss) -> cst.Arg | None:
    """The loss-input argument of ``call`` when it calls ``loss`` (its function, or an
    instance of its class), else None."""
    qual = ctx.qualified_name(call.func)
    if qual != loss.function and (qual is not None or instance_class(
            ctx, call.func) != loss.layer):
        return None
    return get_arg(call, "input", 0)


def flow_into(ctx: FileContext, arg: cst.Arg, kind: str) -> Flow | None:
    """The ``kind`` producer (softmax or sigmoid) that flows into ``arg``, if one does."""
    found = producer(ctx, arg.value)
    if found is not None:
        return Flow(found, True) if found.kind == kind else None
    if type(arg.value) is cst.Name:
        bound = ctx.binding(arg.value.value)
        if bound is not None and bound.kind == "assign" and bound.value is not None:
            found = producer(ctx, bound.value, bound.node)
            if found is not None and found.kind == kind:
                return Flow(found, False)
    return None


def is_nested_producer(ctx: FileContext, call: cst.Call, kind: str, loss: Loss) -> bool:
    """``call`` is a ``kind`` producer written directly as the loss input of a call of the
    functional ``loss`` (decidable anywhere in the file: no bindings involved)."""
    index = index_for(ctx)
    arg = index.parents.get(call)
    outer = index.parents.get(arg) if isinstance(arg, cst.Arg) else None
    if not isinstance(outer, cst.Call) or ctx.qualified_name(outer.func) != loss.function:
        return False
    if get_arg(outer, "input", 0) is not arg:
        return False
    qual = ctx.qualified_name(call.func)
    return _FUNCTIONS.get(qual or "") == kind


def unused_import_edits(ctx: FileContext, func: cst.BaseExpression,
                        fixable: Callable[[cst.Call], bool]) -> tuple[NodeEdit, ...]:
    """The edits removing the import of the name ``func`` is spelled with (``softmax``
    after ``from torch.nn.functional import softmax``, ``F`` after ``import
    torch.nn.functional as F``) once the fix leaves it unused: every use is a call that
    ``fixable`` accepts."""
    root = func
    while type(root) is cst.Attribute:
        root = root.value
    if type(root) is not cst.Name:
        return ()
    return import_cleanup(index_for(ctx), root.value, fixable, func)


class ActivationIntoLoss(Rule):
    """Shared logic of TL214-TL217 (no code: not a rule by itself): report an
    ``activation`` output flowing into the input of ``loss``, at that argument; the fix
    (written by each rule) is offered only when the activation call is the argument."""

    loss: ClassVar[Loss]
    activation: ClassVar[str]
    message = "{what} passed to a loss"

    def visit_Call(self, node: cst.Call) -> None:
        arg = loss_input(self.context, node, self.loss)
        if arg is None:
            return
        flow = flow_into(self.context, arg, self.activation)
        if flow is None:
            return
        if not flow.direct:
            name = self.context.code(arg.value)
            self.report(arg, what=f"'{name}' holds a {self.activation} output that is")
            return
        self.report(arg, what=f"a {self.activation} output", fix=self.fix(node, flow.producer))

    def fix(self, loss_call: cst.Call, found: Producer) -> Fix | None:
        return None

    def nested(self, use: cst.Call) -> bool:
        """``use`` is an activation function call written directly as the input of the
        functional loss (the case decidable anywhere in the file)."""
        return is_nested_producer(self.context, use, self.activation, self.loss)

    def unwrapped(self, found: Producer) -> tuple[NodeEdit, ...] | None:
        """The edits replacing the activation call by the tensor it is applied to, and
        removing an import that only such calls used (None: no such edit)."""
        text = _unwrapped_text(found.call, found.tensor, self.context.code)
        if text is None:
            return None
        cleanup = unused_import_edits(self.context, found.call.func,
                                      lambda use: use is found.call or self.unwraps(use))
        return (NodeEdit(found.call, text), *cleanup)

    def unwraps(self, use: cst.Call) -> bool:
        """``use`` is a call :meth:`unwrapped` replaces wherever it stands in the file."""
        return self.nested(use) and _unwrapped_text(use, _input_tensor(use), code) is not None


def _unwrapped_text(call: cst.Call, tensor: cst.BaseExpression | None,
                    render: Callable[[cst.CSTNode], str]) -> str | None:
    """The tensor's source, to stand for the whole call (None: none, or comments of the
    call would be lost)."""
    if tensor is None:
        return None
    text = render(tensor)
    return text if keeps_comments(call, text) else None
