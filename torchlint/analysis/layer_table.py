"""The ``torch.nn`` layers the size analysis knows: family, spatial dimensions and parameter
names in positional order, and which parameters hold the sizes a layer accepts and
produces. Plain data without libcst: the ``ast`` triage reads it too, to decide before
parsing whether a file has the layers a size chain needs (TL510-TL512)."""

from __future__ import annotations

_CONV = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
         "groups", "bias", "padding_mode")
_CONV_T = ("in_channels", "out_channels", "kernel_size", "stride", "padding",
           "output_padding", "groups", "bias", "dilation", "padding_mode")
MAX_POOL = ("kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode")
AVG_POOL = ("kernel_size", "stride", "padding", "ceil_mode")
_RNN = ("input_size", "hidden_size", "num_layers")

# name -> (family, spatial dims, parameter names in positional order)
LAYERS: dict[str, tuple[str, int, tuple[str, ...]]] = {
    "Linear": ("linear", 0, ("in_features", "out_features")),
    "Bilinear": ("bilinear", 0, ("in1_features", "in2_features", "out_features")),
    "GroupNorm": ("gn", 0, ("num_groups", "num_channels")),
    "LayerNorm": ("ln", 0, ("normalized_shape",)),
    "Embedding": ("embed", 0, ("num_embeddings", "embedding_dim")),
    "EmbeddingBag": ("embed", 0, ("num_embeddings", "embedding_dim")),
    "RNN": ("rnn", 0, _RNN), "LSTM": ("rnn", 0, _RNN), "GRU": ("rnn", 0, _RNN),
    "RNNCell": ("cell", 0, ("input_size", "hidden_size")),
    "GRUCell": ("cell", 0, ("input_size", "hidden_size")),
    "MultiheadAttention": ("mha", 0, ("embed_dim", "num_heads")),
    "TransformerEncoderLayer": ("same", 0, ("d_model", "nhead")),
    "Flatten": ("flatten", 0, ("start_dim", "end_dim")),
    "Upsample": ("upsample", 0, ("size", "scale_factor", "mode")),
    "UpsamplingNearest2d": ("upsample", 2, ("size", "scale_factor")),
    "UpsamplingBilinear2d": ("upsample", 2, ("size", "scale_factor")),
    "LazyLinear": ("linear", 0, ("out_features",)),
}
for _n in (1, 2, 3):
    LAYERS[f"Conv{_n}d"] = ("conv", _n, _CONV)
    LAYERS[f"ConvTranspose{_n}d"] = ("convT", _n, _CONV_T)
    LAYERS[f"LazyConv{_n}d"] = ("conv", _n, _CONV[1:])
    LAYERS[f"LazyConvTranspose{_n}d"] = ("convT", _n, _CONV_T[1:])
    LAYERS[f"BatchNorm{_n}d"] = ("bn", _n, ("num_features",))
    LAYERS[f"LazyBatchNorm{_n}d"] = ("bn", _n, ())
    LAYERS[f"InstanceNorm{_n}d"] = ("in", _n, ("num_features", "eps", "momentum", "affine",
                                                "track_running_stats"))
    LAYERS[f"MaxPool{_n}d"] = ("pool", _n, MAX_POOL)
    LAYERS[f"AvgPool{_n}d"] = ("pool", _n, AVG_POOL)
    LAYERS[f"AdaptiveAvgPool{_n}d"] = ("adaptive", _n, ("output_size",))
    LAYERS[f"AdaptiveMaxPool{_n}d"] = ("adaptive", _n, ("output_size",))
    LAYERS[f"Dropout{_n}d"] = ("dropnd", _n, ())
    for _pad in ("Zero", "Constant", "Reflection", "Replication", "Circular"):
        LAYERS[f"{_pad}Pad{_n}d"] = ("pad", _n, ("padding",))
LAYERS["ZeroPad2d"] = ("pad", 2, ("padding",))


def size_parameters(leaf: str) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
    """The parameters (name, position) holding the size ``leaf`` accepts and the size it
    produces, as the size analysis reads them (None: the layer has none)."""
    family, _, names = LAYERS[leaf]
    lazy = leaf.startswith("Lazy")

    def named(name: str) -> tuple[str, int] | None:
        return (name, names.index(name)) if name in names else None

    first = named(names[0]) if names else None
    if family in ("linear", "conv", "convT"):
        return (None if lazy else first), (first if lazy else named(names[1]))
    if family == "bilinear":
        return None, named("out_features")
    if family in ("bn", "in", "ln", "mha", "same"):
        return first, first
    if family == "gn":
        return named("num_channels"), named("num_channels")
    if family == "embed":
        return None, named("embedding_dim")
    if family in ("rnn", "cell"):
        return first, named("hidden_size")
    return None, None


# families whose layers accept only some input ranks, and those that produce a known rank
RANKED = frozenset({"bn", "conv", "convT", "in", "pool", "adaptive", "pad", "dropnd"})
FLAT = frozenset({"linear", "bilinear", "same", "flatten", "cell", "embed"})



# a stated input: a tensor of a literal shape made by one of these (torch.randint takes its
# shape as ``size``, read apart) and passed to a model, seen through these methods of the
# model (``Net().to(dev)``)
INPUT_FACTORIES = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones",
                             "torch.empty"})
INSTANCE_METHODS = frozenset({"to", "cuda", "cpu", "eval", "float"})
