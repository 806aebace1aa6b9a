from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import (
    get_arg,
    is_literal_false,
    is_literal_true,
    iter_nodes,
    self_attribute,
    single_target,
)
from torchlint.analysis.torch_facts import layer_name
from torchlint.engine.triage import module_method_calls
from torchlint.rule import Rule

_EXACT = frozenset({
    "Linear", "Bilinear", "PReLU", "LayerNorm", "GroupNorm", "Embedding", "EmbeddingBag",
    "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell", "MultiheadAttention", "Transformer",
    "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
    "TransformerDecoderLayer", "SyncBatchNorm", "RMSNorm",
})
_PREFIXES = ("Conv", "ConvTranspose", "BatchNorm", "InstanceNorm", "Lazy")
# layers whose parameters are switched off by a keyword (and that keep no running stats)
_AFFINE_KEYWORD = {"LayerNorm": "elementwise_affine", "GroupNorm": "affine", "RMSNorm":
                   "elementwise_affine"}
# prefilter: a whole name of _EXACT, or a name starting with one of _PREFIXES
_LAYER_NAMES = (r"\b(?:" + "|".join(sorted(_EXACT, key=lambda n: (-len(n), n))) + r")\b"
                r"|\b(?:" + "|".join(_PREFIXES) + ")")


class LayerCreatedInForward(Rule):
    """## What it does
    Flags a layer with learnable parameters (`nn.Linear`, `nn.Conv2d`, `nn.BatchNorm2d`,
    `nn.LSTM`, `nn.Embedding`, ...) constructed inside a module's `forward`.

    ## Why is this bad?
    A layer built in `forward` is a new object on every call, with freshly initialised
    random weights. It is not registered with the module, the optimizer never sees its
    parameters, and nothing it would learn survives the call: the model effectively
    applies a random projection, and the results differ from run to run. It also stays
    on the CPU after `model.cuda()`. Build the layer once in `__init__` and call it in
    `forward`.

    ## Example
    ```python
    import torch.nn as nn


    class Head(nn.Module):
        def forward(self, x):
            proj = nn.Linear(x.shape[-1], 10)
            return proj(x)
    ```

    Use instead:
    ```python
    import torch.nn as nn


    class Head(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.proj = nn.Linear(width, 10)

        def forward(self, x):
            return self.proj(x)
    ```

    ## Fix safety
    No fix: the layer has to move to `__init__`, which needs its sizes there.
    Parameter-free layers (`nn.ReLU`, `nn.Dropout`, pooling, ...) are not flagged.
    """

    code = "TL105"
    name = "layer-created-in-forward"
    # the module class is the ast trigger's to decide: a base from the project may be one
    # without the file spelling "Module"
    triggers = ("forward",)
    # a module class with a `def forward`; a torch.nn layer (`nn` spelled in its import or
    # call) whose class name is one of those with parameters
    patterns = (r"\bdef[\s\\]+forward\b", r"\bnn\b", _LAYER_NAMES)
    requires = module_method_calls("forward", callees=(r"re:torch\.nn\.(?:parallel\.)?[A-Z]\w*",))
    message = "nn.{layer} is created in forward: new random weights on every call, never trained"

    def visit_Call(self, node: cst.Call) -> None:
        if not self.context.in_forward():
            return
        layer = layer_name(self.context, node)
        if layer is None or not self._has_parameters(layer, node):
            return
        if self._lazy_cached(node):
            return
        self.report(node, layer=layer)

    @staticmethod
    def _has_parameters(layer: str, call: cst.Call) -> bool:
        if layer not in _EXACT and not any(
            layer.startswith(p) and layer[len(p):][:1].isupper() or (
                layer.startswith(p) and layer[len(p):] in ("1d", "2d", "3d", ""))
            for p in _PREFIXES
        ):
            return False
        if layer.startswith("InstanceNorm"):
            # no affine weights and no running stats unless asked for
            affine = get_arg(call, "affine")
            stats = get_arg(call, "track_running_stats")
            return (affine is not None and is_literal_true(affine.value)) or (
                stats is not None and is_literal_true(stats.value))
        keyword = _AFFINE_KEYWORD.get(layer)
        if keyword is not None:
            arg = get_arg(call, keyword)
            return arg is None or not is_literal_false(arg.value)
        return True

    def _lazy_cached(self, node: cst.Call) -> bool:
        """``if self.proj is None: self.proj = nn.Linear(...)`` builds it once and keeps it
        (also ``self.heads[k] = ...``, ``self.blocks.append(...)``, ``self.add_module(n, ...)``,
        ``setattr(self, n, ...)`` under an ``if``)."""
        if not self._stored_on_self(node):
            return False
        return self.context.enclosing(cst.If, stop_at_scope=True) is not None

    def _stored_on_self(self, node: cst.Call) -> bool:
        parent = self.context.parent(node)
        if isinstance(parent, (cst.Assign, cst.AnnAssign)):
            target = single_target(parent)
            if isinstance(target, cst.Subscript):
                target = target.value
            if isinstance(target, cst.Name):  # new = nn.Embedding(...); ...; self.emb = new
                function = self.context.current_function
                return function is not None and any(
                    isinstance(n, cst.Assign) and isinstance(n.value, cst.Name)
                    and n.value.value == target.value
                    and self_attribute(single_target(n)) is not None
                    for n in iter_nodes(function.body))
            return self_attribute(target) is not None
        if isinstance(parent, cst.Arg):
            call = self.context.parent(parent)
            if not isinstance(call, cst.Call):
                return False
            func = call.func
            if isinstance(func, cst.Attribute):
                owner = func.value
                return (isinstance(owner, cst.Name) and owner.value == "self") or (
                    self_attribute(owner) is not None)
            return self.context.qualified_name(func) == "builtins.setattr" and bool(
                call.args) and isinstance(call.args[0].value, cst.Name) and (
                call.args[0].value.value == "self")
        return False
