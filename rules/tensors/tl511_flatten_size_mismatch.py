from __future__ import annotations

from torchlint.engine.triage import check, size_chain
from torchlint.rules.tensors.size_chains import SizeChainRule


class FlattenSizeMismatch(SizeChainRule):
    """## What it does
    Flags a `Linear` whose `in_features` differs from the provable number of features a
    flatten hands it: `x.view(-1, K)` / `x.view(N, K)` / `x.reshape(N, K)`, or
    `torch.flatten(x, 1)` / `x.view(x.size(0), -1)` / `nn.Flatten()` after a conv and
    pool stack whose output size is provable, from adaptive pooling or from an input size
    the project states (a dummy input such as `model(torch.randn(1, 3, 32, 32))` in the file
    or another file of the project, or an ONNX export). The spatial sizes are followed through convolution, pooling, padding and
    upsampling arithmetic (kernel, stride, padding, dilation, `ceil_mode`). Unknown
    spatial sizes are never guessed.

    ## Why is this bad?
    It is the classic "16 * 5 * 5" crash: the flattened size was computed for another
    input size or another stack, and the first batch fails with "mat1 and mat2 shapes
    cannot be multiplied". The message says how many features arrive and from where.

    ## Example
    ```python
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 16, 5)
            self.fc = nn.Linear(16 * 5 * 5, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv(x)), 2)
            x = x.view(-1, 16 * 14 * 14)
            return self.fc(x)
    ```

    Use instead:
    ```python
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 16, 5)
            self.fc = nn.Linear(16 * 14 * 14, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv(x)), 2)
            x = x.view(-1, 16 * 14 * 14)
            return self.fc(x)
    ```

    ## Fix safety
    No fix: whether the flatten or the layer is wrong cannot be read from the code. The
    message says which `in_features` would match what arrives.
    """

    code = "TL511"
    name = "flatten-size-mismatch"
    message = "{detail}"
    kind = "flatten"
    triggers = ("Linear",)
    requires = size_chain("size") & check(
        "torchlint.rules.tensors.size_screens:may_flag_tl511")
