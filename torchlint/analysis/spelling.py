"""How torch names are spelled: one canonical spelling of a qualified name, and the words
that name a model. Pure text, without libcst: the ``ast`` triage and the text prefilter
use them before any syntax tree of libcst exists."""

from __future__ import annotations

import re

# the methods that back-propagate (``loss.backward()``, Lightning's ``self.manual_backward``)
BACKWARD_METHODS = frozenset({"backward", "manual_backward"})


def canonical(qualname: str) -> str:
    """Fold re-export paths so rules compare one spelling (torch.nn.modules.conv.Conv2d)."""
    if qualname.startswith("torch.nn.modules."):
        return "torch.nn." + qualname.rsplit(".", 1)[1]
    if qualname.startswith("torch.nn.parallel.") and qualname.count(".") == 4:
        return "torch.nn.parallel." + qualname.rsplit(".", 1)[1]
    return qualname


def model_names_pattern(model_names: frozenset[str]) -> str:
    """A regular expression alternative matching every name
    :func:`is_model_name` accepts as the last part of a
    callee (for the rules' prefilter patterns)."""
    words = "|".join(sorted(re.escape(w) for w in model_names))
    return rf"\w*(?:model|net)|(?:\b|_)(?:{words})|\b(?:model|net)_\w*"


def is_optimizer_word(name: str) -> bool:
    """A name that reads as an optimizer's: ``optimizer``, ``opt``, ``optimizerD``,
    ``opt_g``, ``g_opt`` (the last part of an optimizer's expression)."""
    lowered = name.lower()
    return "optim" in lowered or lowered in ("opt", "opts") or lowered.startswith(
        "opt_") or lowered.endswith("_opt")


# First words of names that build or handle a model rather than being one (build_model)
MODEL_HELPER_VERBS = frozenset({
    "benchmark", "build", "check", "clone", "compile", "configure", "convert", "copy", "count",
    "create", "describe", "download", "export", "freeze", "get", "init", "inspect",
    "instantiate", "load", "log", "make", "measure", "plot", "prepare", "print", "profile",
    "push", "register", "reset", "restore", "resume", "save", "set", "setup", "show",
    "summarize", "to", "unfreeze", "unwrap", "update", "upload", "validate", "visualize", "wrap",
    "accepts", "has", "is", "test", "uses",
})
# Last words of names that hold something about a model, not the model (model_path)
NOT_A_MODEL_ENDINGS = frozenset({"fn", "func", "name", "path", "cls", "class"})
# First words that make the rest of a name a model's name (model_ema, net_g)
MODEL_PREFIX_WORDS = frozenset({"model", "net"})


def is_model_name(name: str, model_names: frozenset[str]) -> bool:
    """Does ``name`` (a variable, parameter or attribute) name a model?

    ``model``, ``net``, ``generator`` (``model_names``, from the settings); ``ema_model``,
    ``fake_discriminator`` (ending in one); ``model_ema``, ``net_g``; ``resnet``,
    ``mymodel``. Not helpers such as ``build_model`` or ``get_net``, not ``model_path`` or
    ``model_fn``, and not a class (``Generator``: calling it builds a model).
    """
    if name[:1].isupper():
        return False
    words = [w for w in name.lower().split("_") if w]
    if not words:
        return False
    if len(words) == 1:
        word = words[0]
        return word in model_names or word.endswith(("model", "net"))
    if words[0] in MODEL_HELPER_VERBS or words[-1] in NOT_A_MODEL_ENDINGS:
        return False
    return words[-1] in model_names or words[0] in MODEL_PREFIX_WORDS


LOSS_FUNCTIONS = frozenset(
    f"torch.nn.functional.{name}"
    for name in (
        "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
        "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
        "gaussian_nll_loss", "cosine_embedding_loss", "ctc_loss", "hinge_embedding_loss",
        "margin_ranking_loss", "multi_margin_loss", "multilabel_margin_loss",
        "multilabel_soft_margin_loss", "soft_margin_loss", "triplet_margin_loss",
        "triplet_margin_with_distance_loss",
    )
)


def is_loss_class(qual: str) -> bool:
    return qual.startswith("torch.nn.") and qual.endswith("Loss") and qual.count(".") == 2


_GRAPH_OUTPUT_WORDS = ("out", "logit", "pred")


def reads_as_graph_output(name: str) -> bool:
    """``loss``, ``batch_class_loss``, ``out``, ``outputs``, ``cls_logits``, ``y_pred``:
    a name for what a model or criterion returns its graph in."""
    lowered = name.lower()
    return "loss" in lowered or any(
        word.startswith(_GRAPH_OUTPUT_WORDS) for word in lowered.split("_"))


# Top-level packages of other frameworks: a value made by one of them is not a torch value,
# whatever its name says (``loss_fn = keras.losses.MeanSquaredError()``).
FOREIGN_FRAMEWORKS = frozenset({
    "tensorflow", "keras", "tf_keras", "jax", "jaxlib", "flax", "haiku", "optax", "equinox",
    "cupy", "numpy", "sklearn", "mxnet", "paddle", "chainer", "mindspore", "oneflow",
})
# Packages whose objects have a ``forward`` method and are no torch modules: inference
# engines (an OpenCV ``dnn`` net, an ONNX Runtime session).
INFERENCE_ENGINES = frozenset({"cv2", "onnxruntime", "openvino", "tensorrt", "tflite_runtime",
                               "tritonclient", "coremltools", "ncnn", "caffe", "dlib",
                               "mediapipe"})

# a project helper that puts a module into another one by its name or path
# (``set_module_by_path(net, path, wrapper)``, ``replace_module(model, name, new)``, ``rsetattr``)
PLACING_HELPER = re.compile(r"^_*(set|register|replace|attach|insert|inject)_(sub)?"
                            r"(module|layer|attr)|setattr$")

# a comment or docstring saying the code is taken from another code base (with its address)
PORTED_NOTE = re.compile(r"\b(?:adapted|modified|ported|borrowed|copied|referred|taken|converted)"
                         r"\b[^\n]{0,60}?\bfrom\b[^\n]{0,80}?(?:https?://|github\.com)",
                         re.IGNORECASE)


def from_elsewhere(qual: str) -> bool:
    """A qualified name from another module than torch or the builtins: the project
    knowledge may make it anything (a torch name re-exported, a constant)."""
    return not qual.startswith(("torch.", "builtins."))
