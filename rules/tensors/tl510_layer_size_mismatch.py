from __future__ import annotations

from torchlint.engine.triage import check, size_chain
from torchlint.rules.tensors.size_chains import SizeChainRule


class LayerSizeMismatch(SizeChainRule):
    """## What it does
    Flags a layer whose provable input size differs from the provable output size of the
    layer before it in a size chain: consecutive elements of an `nn.Sequential` (also
    built from a list, an `OrderedDict`, `add_module` calls or a helper method's list) or
    consecutive layers applied to one value in `forward`. Linear to Linear, convolution to
    convolution or normalisation, Linear to `BatchNorm1d`/`LayerNorm`, Embedding to an
    RNN's input, an RNN's output to Linear. Sizes come from literals, module-level
    constants (also imported from the project), class attributes, simple arithmetic, and
    `__init__` parameters where the project constructs the class with literal arguments
    or its defaults (one check per construction; a class built nowhere is not checked). A
    module class of the project used as a layer (`Block(64, 128)`) passes the chain on
    when its first layer's input size and its `forward`'s output size are proven. An
    unknown size, a lazy layer, a reshape, a concatenation, an unknown call or a branch
    between the layers stops the chain: nothing is reported across it. Pooling, padding,
    dropout and activations keep the channel count, so the chain continues through them.

    ## Why is this bad?
    PyTorch raises at the first batch ("mat1 and mat2 shapes cannot be multiplied
    (64x128 and 256x10)", "expected input to have 64 channels, but got 32 channels"),
    after data loading and start-up, and wrong shapes are the most common fault in
    deep-learning code. The message names both layers and sizes, and the number that
    would make the chain consistent.

    ## Example
    ```python
    import torch.nn as nn

    head = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(256, 10))
    ```

    Use instead:
    ```python
    import torch.nn as nn

    head = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    ```

    ## Fix safety
    No fix: which of the two layers is wrong cannot be read from the code. The message
    says which number would make the chain consistent.
    """

    code = "TL510"
    name = "layer-size-mismatch"
    message = "{detail}"
    kind = "size"
    triggers = ("Linear", "Conv", "Norm", "RNN", "LSTM", "GRU", "MultiheadAttention",
                "TransformerEncoderLayer")
    requires = size_chain("size") & check(
        "torchlint.rules.tensors.size_screens:may_flag_tl510")
