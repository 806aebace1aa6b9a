from __future__ import annotations

from torchlint.engine.triage import check, size_chain
from torchlint.rules.tensors.size_chains import SizeChainRule


class LayerRankMismatch(SizeChainRule):
    """## What it does
    Flags a layer whose accepted input rank cannot match the provable rank of the value
    reaching it in a size chain: `BatchNorm1d` after `Conv2d`, `BatchNorm2d`, `Dropout2d`
    or `Conv2d` after `Linear` or `Flatten`, `Conv1d` after `Conv2d`, with no reshape,
    `view`, `unsqueeze` or `permute` in between. A `Linear` after a convolution is legal
    (it applies to the last dimension) and is not flagged.

    ## Why is this bad?
    A norm, convolution or pooling layer of the wrong rank raises at the first batch
    ("expected 2D or 3D input (got 4D input)"). `Dropout2d` on a 2-D input only warns,
    and zeroes entries as if they were channels: not the dropout the author meant.

    ## Example
    ```python
    import torch.nn as nn

    features = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm1d(16), nn.ReLU())
    ```

    Use instead:
    ```python
    import torch.nn as nn

    features = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU())
    ```

    ## Fix safety
    No fix: the message names the layer of the rank that arrives (`BatchNorm2d` for 4-D
    input), but whether the layer or the value is wrong cannot be read from the code.
    """

    code = "TL512"
    name = "layer-rank-mismatch"
    message = "{detail}"
    kind = "rank"
    triggers = ("BatchNorm", "Conv", "InstanceNorm", "Pool", "Pad", "Dropout")
    requires = size_chain("rank") & check(
        "torchlint.rules.tensors.size_screens:may_flag_tl512")
