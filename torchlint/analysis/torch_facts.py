"""What torch names mean: module and dataset base classes, layers, losses, tensor
factories, dtypes and devices. Rules ask these instead of comparing spellings."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.analysis.bindings import module_value
from torchlint.analysis.layer_table import NON_LAYER_CLASSES  # noqa: F401 - rules ask it here
from torchlint.analysis.nodes import last_name_part, string_value
from torchlint.analysis.spelling import (  # noqa: F401 - rules ask this module
    BACKWARD_METHODS,
    FOREIGN_FRAMEWORKS,
    LOSS_FUNCTIONS,
    MODEL_HELPER_VERBS,
    MODEL_PREFIX_WORDS,
    NOT_A_MODEL_ENDINGS,
    canonical,
    is_loss_class,
    is_model_name,
    model_names_pattern,
)

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


TENSOR_FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "tensor", "zeros", "ones", "empty", "full", "eye", "rand", "randn", "randint",
        "randperm", "arange", "linspace", "logspace", "zeros_like", "ones_like", "empty_like",
        "full_like", "rand_like", "randn_like", "randint_like", "as_tensor", "range",
    )
)



CUDA_PREFIXES = ("cuda", "cpu", "mps", "xpu", "meta")


# ------------------------------------------------------------- torch facts
def is_layer_call(ctx: FileContext, node: cst.CSTNode) -> bool:
    """A call constructing a ``torch.nn`` layer class, or a module class of this file or
    of the project (``from .layers import BaseBlock``)."""
    if not isinstance(node, cst.Call):
        return False
    qual = ctx.qualified_name(node.func)
    if qual is not None:
        return is_layer_name(qual) or (
            not qual.startswith(("torch.", "builtins.")) and ctx.is_module_class_name(qual))
    return ctx.local_module_class(node.func) is not None


def is_layer_name(qual: str) -> bool:
    for prefix in ("torch.nn.", "torch.nn.parallel."):
        if qual.startswith(prefix):
            leaf = qual[len(prefix):]
            if "." not in leaf and leaf[:1].isupper() and leaf not in NON_LAYER_CLASSES:
                return True
    return False


def layer_name(ctx: FileContext, node: cst.CSTNode) -> str | None:
    """``Conv2d`` for a ``nn.Conv2d(...)`` call (torch.nn classes only)."""
    if isinstance(node, cst.Call):
        qual = ctx.qualified_name(node.func)
        if qual is not None and is_layer_name(qual):
            return qual.rsplit(".", 1)[1]
    return None


def is_tensor_factory(ctx: FileContext, node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and ctx.qualified_name(node.func) in TENSOR_FACTORIES


def is_loss_call(ctx: FileContext, node: cst.CSTNode) -> bool:
    """A call of a loss: ``F.cross_entropy(...)``, ``nn.MSELoss()(...)``, or ``criterion(...)``.

    Calls of names bound to a ``torch.nn`` loss instance count too (``crit = nn.L1Loss()``),
    as do names spelling a loss (``criterion``, ``loss_fn``, ``*_loss``...).
    """
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    qual = ctx.qualified_name(func)
    if qual in LOSS_FUNCTIONS:
        return True
    if isinstance(func, cst.Call):  # nn.MSELoss()(a, b)
        inner = ctx.qualified_name(func.func)
        return inner is not None and is_loss_class(inner)
    name = last_name_part(func)
    if name is None or (qual is not None and qual.startswith("torch.")):
        return False
    lowered = name.lower()
    if lowered in ("criterion", "criterium", "loss_fn", "loss_func", "lossfn", "loss_function",
                   "compute_loss", "loss") or lowered.endswith(("_loss", "_criterion", "loss_fn")):
        return may_be_torch(ctx, func, node)
    if isinstance(func, cst.Name):
        bound = ctx.binding(func.value, node)
        if bound is not None and bound.kind == "assign" and isinstance(bound.value, cst.Call):
            inner = ctx.qualified_name(bound.value.func)
            return inner is not None and is_loss_class(inner)
    return False




def is_foreign(ctx: FileContext, expr: cst.BaseExpression | None) -> bool:
    """``expr`` (a call or a name) resolves to another framework than torch."""
    if expr is None:
        return False
    target = expr.func if isinstance(expr, cst.Call) else expr
    while isinstance(target, cst.Call):  # keras.losses.get("mse")(...)
        target = target.func
    qual = ctx.qualified_name(target)
    return qual is not None and qual.split(".", 1)[0] in FOREIGN_FRAMEWORKS


def may_be_torch(ctx: FileContext, callee: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """May a callee guessed from its name (``criterion``, ``loss_fn``, ``model``) be a torch
    object? Only in a file that uses torch, and not when the name is bound to another
    framework's object (TensorFlow, Keras, JAX/Flax, CuPy, NumPy...)."""
    if not ctx.imports_from("torch"):
        return False
    if isinstance(callee, cst.Name):
        bound = ctx.binding(callee.value, at)
        if bound is not None and bound.kind == "assign" and is_foreign(ctx, bound.value):
            return False
        if bound is None and ctx.current_function is not None:
            found = module_value(ctx, callee.value)
            if found is not None and is_foreign(ctx, found[1]):
                return False
    return True


def is_device_like(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """A device: 'cuda'/'cpu:0' strings, torch.device(...), or a name mentioning device/dev."""
    text = string_value(node)
    if text is not None:
        return text.startswith(CUDA_PREFIXES)
    if isinstance(node, cst.Call):
        return ctx.qualified_name(node.func) == "torch.device"
    name = last_name_part(node)
    if name is not None and isinstance(node, (cst.Name, cst.Attribute)):
        lowered = name.lower()
        return "device" in lowered or lowered == "dev" or lowered.startswith("dev_") or \
            lowered.endswith("_dev")
    return False


def is_dtype(ctx: FileContext, node: cst.BaseExpression) -> bool:
    qual = ctx.qualified_name(node)
    return qual is not None and qual.startswith("torch.") and qual.count(".") == 1 and (
        qual.split(".")[1] in DTYPE_NAMES)


DTYPE_NAMES = frozenset({
    "float", "float32", "float64", "double", "float16", "half", "bfloat16", "int", "int8",
    "int16", "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128",
    "cfloat", "cdouble", "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64",
})


SET_GRAD_ENABLED = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled",
                              "torch.autograd.grad_mode.set_grad_enabled"})
AUTOCAST_NAMES = frozenset({
    "torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
    "torch.amp.autocast_mode.autocast", "torch.cuda.amp.autocast_mode.autocast",
    "torch.xpu.amp.autocast",
})
NO_GRAD_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                              "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode"})


# ---------------------------------------------------------------- backward
# Methods that backpropagate a loss: Tensor.backward, LightningModule.manual_backward


def is_backward_call(ctx: FileContext, node: cst.CSTNode) -> bool:
    """``loss.backward()``, ``self.manual_backward(loss)``, ``torch.autograd.backward(...)``."""
    if type(node) is not cst.Call:
        return False
    if type(node.func) is cst.Attribute and node.func.attr.value in BACKWARD_METHODS:
        return True
    return ctx.qualified_name(node.func) == "torch.autograd.backward"


def is_torch_nn(ctx: FileContext, expr: cst.BaseExpression, *leaves: str) -> bool:
    qual = ctx.qualified_name(expr)
    return qual is not None and qual.startswith("torch.nn.") and qual[len("torch.nn."):] in leaves
