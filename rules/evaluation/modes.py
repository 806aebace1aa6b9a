"""Does a model behave differently in train and eval mode? Only dropout, batch norm (and
other layers with running statistics), recurrent and transformer layers with dropout, and
code reading ``self.training`` do; a model built only from other torch layers does not."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import get_arg, iter_nodes, iter_scope, method_call, parameters
from torchlint.analysis.torch_facts import is_layer_name

# torch.nn layers whose forward depends on the mode
_MODE_LAYERS = ("Dropout", "AlphaDropout", "FeatureAlphaDropout", "BatchNorm", "LazyBatchNorm",
                "SyncBatchNorm", "InstanceNorm", "LazyInstanceNorm", "Transformer")
# torch.nn layers known to compute the same in both modes (anything else is not assumed to)
_MODE_FREE_LAYERS = ("Linear", "Bilinear", "LazyLinear", "Conv", "LazyConv", "Identity",
                     "Flatten", "Unflatten", "MaxPool", "AvgPool", "AdaptiveAvgPool",
                     "AdaptiveMaxPool", "LPPool", "Embedding", "LayerNorm", "GroupNorm",
                     "RMSNorm", "LocalResponseNorm", "ReLU", "ReLU6", "LeakyReLU", "PReLU",
                     "RReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid",
                     "Tanh", "Softmax", "LogSoftmax", "Softmin", "Softplus", "Softsign",
                     "Hardtanh", "Hardswish", "Hardsigmoid", "Tanhshrink", "Threshold",
                     "Upsample", "PixelShuffle", "PixelUnshuffle", "ZeroPad", "ConstantPad",
                     "ReflectionPad", "ReplicationPad", "CircularPad", "ChannelShuffle")
# recurrent layers and attention: mode-dependent only with a non-zero dropout
_DROPOUT_ARG = frozenset({"RNN", "LSTM", "GRU", "MultiheadAttention"})
_MOVES = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "train",
                    "requires_grad_", "share_memory"})


def is_mode_free(ctx: FileContext, value: cst.BaseExpression | None) -> bool:
    """``value`` (what a model name is bound to) provably builds a model that computes the
    same in train and eval mode: ``nn.Sequential(nn.Linear(...), nn.ReLU())``, or a module
    class of this file made only of such layers. False whenever that cannot be shown."""
    while value is not None and (attribute := method_call(value, *_MOVES)) is not None:
        value = attribute.value  # Net().to(device)
    if not isinstance(value, cst.Call):
        return False
    qual = ctx.qualified_name(value.func)
    if qual is not None:
        return _torch_layer_is_mode_free(ctx, value, qual, 0)
    cls = ctx.local_module_class(value.func)
    return cls is not None and _class_is_mode_free(ctx, cls)


def _torch_layer_is_mode_free(ctx: FileContext, call: cst.Call, qual: str, depth: int) -> bool:
    if not is_layer_name(qual) or depth > 8:
        return False
    leaf = qual.rsplit(".", 1)[1]
    if leaf.startswith(_MODE_LAYERS):
        return False
    if leaf in _DROPOUT_ARG:
        dropout = get_arg(call, "dropout", 5 if leaf != "MultiheadAttention" else 2)
        return dropout is None or _is_zero(dropout.value)
    if leaf in ("Sequential", "ModuleList", "ModuleDict"):
        return all(_is_mode_free_layer(ctx, arg.value, depth + 1) for arg in call.args)
    # RReLU randomises its slope in training; wrappers (DataParallel) hold another model
    return leaf.startswith(_MODE_FREE_LAYERS) and not leaf.startswith("RReLU")


def _is_mode_free_layer(ctx: FileContext, expr: cst.BaseExpression, depth: int) -> bool:
    if isinstance(expr, (cst.List, cst.Tuple)):
        return all(_is_mode_free_layer(ctx, e.value, depth + 1) for e in expr.elements
                   if isinstance(e, cst.Element))
    if isinstance(expr, cst.Call):
        qual = ctx.qualified_name(expr.func)
        if qual is not None:
            return _torch_layer_is_mode_free(ctx, expr, qual, depth)
    return False


def _class_is_mode_free(ctx: FileContext, cls: cst.ClassDef) -> bool:
    """Every call in the class builds or applies a mode-free torch layer, and nothing reads
    ``self.training`` or calls a functional dropout or batch norm."""
    for node in iter_nodes(cls.body):
        if isinstance(node, cst.Attribute) and node.attr.value == "training":
            return False
        if not isinstance(node, cst.Call):
            continue
        qual = ctx.qualified_name(node.func) or ""
        if qual.startswith("torch.nn.functional.") and (
                "dropout" in qual or "batch_norm" in qual or "instance_norm" in qual):
            return False
        if qual.startswith("torch.nn.") and is_layer_name(qual) and not (
                _torch_layer_is_mode_free(ctx, node, qual, 0)):
            return False
        if ctx.local_module_class(node.func) is not None and ctx.local_module_class(
                node.func) is not cls and not _class_is_mode_free(ctx, ctx.local_module_class(
                    node.func)):  # type: ignore[arg-type]
            return False
        if qual and not qual.startswith(("torch.", "builtins.")) and ctx.is_module_class_name(
                qual):
            return False  # a layer from elsewhere in the project: not looked into
    return True


def _is_zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) and float(expr.value) == 0.0


def every_binding_mode_free(ctx: FileContext, name: str) -> bool:
    """Every assignment of ``name`` in the current function (or, from there, the module)
    builds a mode-free model or moves the same one (``model = model.cuda()``)."""
    scopes: list[cst.CSTNode] = []
    if ctx.current_function is not None:
        scopes.append(ctx.current_function)
    scopes.append(ctx.module)
    for scope in scopes:
        built = 0
        for node in iter_scope(scope.body if isinstance(scope, cst.FunctionDef) else scope):
            if not isinstance(node, cst.Assign) or not any(
                    isinstance(t.target, cst.Name) and t.target.value == name
                    for t in node.targets):
                continue
            value: cst.BaseExpression = node.value
            while (attribute := method_call(value, *_MOVES)) is not None:
                value = attribute.value
            if isinstance(value, cst.Name) and value.value == name:
                continue  # model = model.cuda()
            if not is_mode_free(ctx, value):
                return False
            built += 1
        if built:
            return True
        if scope is ctx.current_function and any(
                p.name.value == name for p in parameters(scope)):  # type: ignore[arg-type]
            return False  # a parameter: its model is unknown here
    return False
