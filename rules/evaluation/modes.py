"""Does a model behave differently in train and eval mode? Only dropout, batch norm (and
other layers with running statistics), recurrent and transformer layers with dropout, and
code reading ``self.training`` do; a model built only from other torch layers does not."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import (
    get_arg,
    iter_nodes,
    iter_scope,
    method_call,
    parameters,
    self_attribute,
)
from torchlint.analysis.torch_facts import is_layer_call, is_layer_name

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
    ``self.training`` or calls a functional dropout or batch norm. A submodule it calls
    must be one it builds: ``self.encoder = encoder`` (a model received) may hold dropout."""
    built: set[str | None] = set()
    received: set[str | None] = set()  # bound to anything else than a layer built here
    for node in iter_nodes(cls.body):
        if isinstance(node, cst.Assign):
            layer = is_layer_call(ctx, node.value)
            for target in node.targets:
                (built if layer else received).add(self_attribute(target.target))
    methods = {stmt.name.value for stmt in cls.body.body if isinstance(stmt, cst.FunctionDef)}
    for node in iter_nodes(cls.body):
        if isinstance(node, cst.Call):
            head = node.func
            while isinstance(head, cst.Attribute) and self_attribute(head) is None:
                head = head.value
            called = self_attribute(head)
            if called is not None and called not in methods and (
                    called in received or called not in built):
                return False
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
        built = _bindings_mode_free(ctx, scope, name)
        if built is not None:
            return built
        if scope is ctx.current_function and any(
                p.name.value == name for p in parameters(scope)):  # type: ignore[arg-type]
            return False  # a parameter: its model is unknown here
    return False


def module_binding_mode_free(ctx: FileContext, name: str) -> bool:
    """Every module-level assignment of ``name`` builds a mode-free model or moves the same
    one, and there is one at least."""
    return bool(ctx.cached(("eval_module_mode_free", name),
                           lambda: _bindings_mode_free(ctx, ctx.module, name)))


def _bindings_mode_free(ctx: FileContext, scope: cst.CSTNode, name: str) -> bool | None:
    """Whether every assignment of ``name`` in ``scope`` builds a mode-free model (or moves
    the same one); None when ``scope`` builds none."""
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
    return True if built else None


def runs_only_mode_free_models(ctx: FileContext, function: cst.FunctionDef, name: str
                               ) -> bool:
    """The model ``name`` that ``function`` runs is provably mode-free: a global of such
    a model, or a parameter that every call of ``function`` in the file (at module level:
    a script or notebook) fills with such a global (``predict(text, model)`` after
    ``model = NBoW(...)``)."""
    params = [p.name.value for p in parameters(function)]
    if name not in params:
        return "." not in name and module_binding_mode_free(ctx, name)
    if function.params.star_arg is not None and any(
            p is function.params.star_arg for p in parameters(function)):
        return False
    calls = ctx.cached(("eval_calls_of", function.name.value),
                       lambda: _calls_of(ctx, function.name.value))
    if calls is None:
        return False
    for call in calls:
        arg = get_arg(call, name, params.index(name))
        if arg is None or not isinstance(arg.value, cst.Name) or (
                not module_binding_mode_free(ctx, arg.value.value)):
            return False
    return True


def _calls_of(ctx: FileContext, name: str) -> list[cst.Call] | None:
    """The calls ``name(...)`` of the file, when there are some and all are at module
    level (outside functions and classes); else None."""
    def calls(nodes: object) -> list[cst.Call]:
        return [n for n in nodes if isinstance(n, cst.Call)  # type: ignore[attr-defined]
                and isinstance(n.func, cst.Name) and n.func.value == name]

    at_module = calls(iter_scope(ctx.module))
    return at_module if at_module and len(at_module) == len(calls(iter_nodes(ctx.module))) \
        else None
