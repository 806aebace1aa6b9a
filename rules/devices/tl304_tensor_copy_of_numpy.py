from __future__ import annotations

import libcst as cst

from torchlint.analysis.tensor_facts import is_numpy_array
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import reference
from torchlint.rule import Rule

_CONSTRUCTORS = {"torch.tensor": "torch.tensor", "torch.Tensor": "torch.Tensor"}


class TensorCopyOfNumpy(Rule):
    """## What it does
    Flags `torch.tensor(a)` and `torch.Tensor(a)` where `a` is evidently a NumPy array,
    which copies the whole array into a new tensor.

    ## Why is this bad?
    `torch.tensor` always copies its input. For a NumPy array `torch.from_numpy` builds a
    tensor over the same buffer without copying, which matters for large arrays loaded in a
    data pipeline. `torch.Tensor(a)` copies too and also casts everything to float32.

    ## Example
    ```python
    import numpy as np
    import torch

    def to_tensor(path):
        table = np.loadtxt(path, dtype=np.float32)
        return torch.tensor(table)
    ```

    Use instead:
    ```python
    import numpy as np
    import torch

    def to_tensor(path):
        table = np.loadtxt(path, dtype=np.float32)
        return torch.from_numpy(table)
    ```

    ## Fix safety
    Unsafe: `torch.from_numpy(a)` shares memory with `a`, so writing to either one now
    changes the other; code that modifies the array after the conversion would change the
    tensor too. `torch.Tensor(a)` becomes `torch.from_numpy(a).float()` to keep its float32
    result.
    """

    code = "TL304"
    name = "tensor-copy-of-numpy"
    triggers = ("tensor", "Tensor")
    # torch.tensor / torch.Tensor resolve through a torch import, the array through numpy;
    # the constructor is called (`tensor(`, `Tensor )(`, `tensor  # c`) or imported `as` alias
    patterns = (r"\btorch\b", r"\bnumpy\b",
                r"\b(?:tensor|Tensor)(?:[\s\\)]*[(#]|[\s\\]+as\b)")
    message = "`{call}(...)` copies a NumPy array; `torch.from_numpy(...)` shares its memory"
    fix_safety = "unsafe"
    fix_title = "Use torch.from_numpy"

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.context.qualified_name(node.func)
        if qual not in _CONSTRUCTORS:
            return
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return
        if not is_numpy_array(self.context, node.args[0].value, self.context.node):
            return
        fix = None
        spelled = reference(self.context, "torch.from_numpy")
        if spelled is not None:
            name, need = spelled
            edits = [NodeEdit(node.func, name)]
            if qual == "torch.Tensor":
                edits.append(NodeEdit(node, ".float()", kind="insert_after"))
            fix = Fix.unsafe(*edits, imports=(need,) if need else ())
        self.report(node, fix=fix, call=qual)
