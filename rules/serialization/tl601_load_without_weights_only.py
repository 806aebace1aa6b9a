from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import get_arg, has_keyword, has_star_args
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import with_keywords
from torchlint.rule import Rule
from torchlint.rules.patterns import torch_function
from torchlint.rules.serialization.files import loads_own_save

LOAD_FUNCTIONS = frozenset({"torch.load", "torch.serialization.load"})


class LoadWithoutWeightsOnly(Rule):
    """## What it does
    Flags `torch.load(...)` calls that do not say `weights_only=`.

    ## Why is this bad?
    A checkpoint file is a pickle. Without `weights_only=True`, loading it may run any
    Python code the file's author put inside, so a downloaded or shared checkpoint can
    take over the machine. (Older PyTorch releases defaulted to full unpickling, newer
    ones default to `weights_only=True`; spelling it out keeps the behaviour the same on
    every version.) Passing `weights_only=False` on purpose is accepted as a conscious
    choice. A file that loads what it saved itself (`torch.save(..., path)` and
    `torch.load(path)` with the same path in the same file, as when the best model is
    reloaded after training) reads no stranger's pickle and is left alone.

    ## Example
    ```python
    import torch

    state = torch.load("checkpoint.pt")
    ```

    Use instead:
    ```python
    import torch

    state = torch.load("checkpoint.pt", weights_only=True)
    ```

    ## Fix safety
    Unsafe: with `weights_only=True` a checkpoint that pickles arbitrary objects (a whole
    model, an optimizer from a custom class, a `Namespace` of settings) no longer loads.
    No fix is offered when a custom `pickle_module=` is passed, as the two cannot be combined.
    """

    code = "TL601"
    name = "load-without-weights-only"
    triggers = ("load",)
    # a torch import; a way to call torch.load (see torch_function)
    patterns = (r"\btorch\b",
                torch_function("load"))
    message = "torch.load() without weights_only=; unpickling can run arbitrary code"
    fix_safety = "unsafe"
    fix_title = "Pass weights_only=True"

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualified_name(node.func) not in LOAD_FUNCTIONS:
            return
        if has_keyword(node, "weights_only") or loads_own_save(self.context, node):
            return
        fix = None
        if get_arg(node, "pickle_module", 2) is None and not has_star_args(node):
            new = with_keywords(node, ("weights_only", cst.Name("True")))
            fix = Fix.unsafe(NodeEdit(node, self.context.code(new)))
        self.report(node, fix=fix)
