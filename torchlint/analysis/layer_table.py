"""The ``torch.nn`` layers the size analysis knows: family, spatial dimensions and parameter
names in positional order, and which parameters hold the sizes a layer accepts and
produces; the layers, functions and methods that keep sizes. Plain data without libcst:
the ``ast`` triage and the tensor rules' screens read it too, to decide before parsing
whether a file has the layers a size chain needs (TL510-TL512), and the methods that may
leave a tensor non-contiguous (TL501)."""

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


def accepted_ranks(family: str, dims: int) -> frozenset[int] | None:
    """The ranks (batch included) a layer of an N-d family accepts (None: any)."""
    if family == "bn":
        return frozenset({2, 3}) if dims == 1 else frozenset({dims + 2})
    if family in ("conv", "convT", "in", "pool", "adaptive", "pad", "dropnd"):
        return frozenset({dims + 1, dims + 2})
    return None


# layers that keep every size of their input
KEEP = frozenset({
    "ReLU", "ReLU6", "LeakyReLU", "PReLU", "RReLU", "ELU", "SELU", "CELU", "GELU", "SiLU",
    "Mish", "Sigmoid", "Tanh", "Hardtanh", "Hardswish", "Hardsigmoid", "Hardshrink",
    "Softshrink", "Softplus", "Softsign", "Tanhshrink", "Threshold", "LogSigmoid", "GLU_",
    "Softmax", "LogSoftmax", "Softmin", "Identity", "Dropout", "AlphaDropout",
    "FeatureAlphaDropout", "LocalResponseNorm",
})
# calls on the flowing value that keep its sizes, and those that change its spatial ones
KEEP_FUNCTIONS = frozenset(
    {f"torch.nn.functional.{f}" for f in (
        "relu", "relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish",
        "sigmoid", "tanh", "hardtanh", "hardswish", "hardsigmoid", "softplus", "softsign",
        "dropout", "alpha_dropout", "softmax", "log_softmax", "normalize", "logsigmoid",
        "relu_", "leaky_relu_", "elu_")}
    | {f"torch.{f}" for f in ("relu", "sigmoid", "tanh", "relu_", "dropout", "softmax",
                              "log_softmax", "clone", "exp", "abs", "sqrt")}
)
KEEP_METHODS = frozenset({
    "contiguous", "relu", "relu_", "sigmoid", "tanh", "float", "half", "double", "clone",
    "detach", "softmax", "log_softmax", "exp", "abs", "sqrt", "clamp", "clamp_", "to",
    "cuda", "cpu", "type_as", "sigmoid_", "tanh_", "bfloat16",
})
SPATIAL_FUNCTIONS = frozenset(
    f"torch.nn.functional.{f}" for f in (
        "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
        "interpolate", "upsample", "pad", "dropout2d", "dropout1d", "dropout3d",
        "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
        "adaptive_max_pool2d", "local_response_norm"))
# methods that reshape the flowing value: a chain stops at them
RESHAPES = frozenset({"view", "reshape", "permute", "transpose", "unsqueeze", "squeeze",
                      "flatten", "unflatten", "expand", "repeat", "t", "mean", "sum", "max",
                      "chunk", "split"})

# tensor methods, attributes and functions that may leave a tensor non-contiguous (TL501)
NON_CONTIGUOUS_METHODS = frozenset({
    "permute", "transpose", "t", "swapaxes", "swapdims", "movedim", "moveaxis", "expand",
    "expand_as", "narrow",
})
NON_CONTIGUOUS_ATTRIBUTES = frozenset({"T", "mT"})
NON_CONTIGUOUS_FUNCTIONS = frozenset(
    f"torch.{name}" for name in NON_CONTIGUOUS_METHODS - {"expand", "expand_as"})

# families whose layers accept only some input ranks, and those that produce a known rank
RANKED = frozenset({"bn", "conv", "convT", "in", "pool", "adaptive", "pad", "dropnd"})
FLAT = frozenset({"linear", "bilinear", "same", "flatten", "cell", "embed"})



# a stated input: a tensor of a literal shape made by one of these (torch.randint takes its
# shape as ``size``, read apart) and passed to a model, seen through these methods of the
# model (``Net().to(dev)``)
INPUT_FACTORIES = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones",
                             "torch.empty"})
INSTANCE_METHODS = frozenset({"to", "cuda", "cpu", "eval", "float"})

# torchvision datasets of one known image size: (channels, height, width)
DATASETS = {
    **{f"torchvision.datasets.{name}": (1, 28, 28)
       for name in ("MNIST", "FashionMNIST", "KMNIST", "EMNIST", "QMNIST")},
    **{f"torchvision.datasets.{name}": (3, 32, 32) for name in ("CIFAR10", "CIFAR100", "SVHN")},
    "torchvision.datasets.STL10": (3, 96, 96),
}
# transforms that keep the image size
KEEP_TRANSFORMS = frozenset(
    f"torchvision.transforms.{name}" for name in (
        "ToTensor", "Normalize", "RandomHorizontalFlip", "RandomVerticalFlip", "ColorJitter",
        "RandomRotation", "RandomGrayscale", "ConvertImageDtype", "PILToTensor",
        "RandomErasing", "GaussianBlur", "AutoAugment", "RandAugment", "TrivialAugmentWide",
        "RandomAutocontrast", "RandomEqualize", "RandomInvert", "RandomPosterize",
        "RandomSolarize", "RandomAdjustSharpness"))
CROPS = frozenset(f"torchvision.transforms.{name}" for name in (
    "CenterCrop", "RandomCrop", "RandomResizedCrop", "Resize"))

# torch.nn names that are classes but not layers
NON_LAYER_CLASSES = frozenset({"Parameter", "ParameterList", "ParameterDict",
                               "UninitializedParameter", "UninitializedBuffer", "Buffer"})
