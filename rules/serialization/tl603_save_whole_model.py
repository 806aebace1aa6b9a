from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import get_arg
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import receiver_text
from torchlint.rule import Rule
from torchlint.rules.patterns import torch_function
from torchlint.rules.serialization.files import is_module_value

SAVE_FUNCTIONS = frozenset({"torch.save", "torch.serialization.save"})


class SaveWholeModel(Rule):
    """## What it does
    Flags `torch.save(model, path)` where `model` is a module object rather than its
    `state_dict()`.

    ## Why is this bad?
    Saving the module pickles the object itself, and a pickle stores references to the
    class by its import path. Renaming the class, moving its file or changing its
    `__init__` makes the checkpoint impossible to load, and loading it needs
    `weights_only=False`, which runs arbitrary code. A `state_dict()` is a plain mapping of
    names to tensors that survives refactors and loads safely.

    ## Example
    ```python
    import torch
    from torch import nn

    model = nn.Linear(8, 2)
    torch.save(model, "model.pt")
    ```

    Use instead:
    ```python
    import torch
    from torch import nn

    model = nn.Linear(8, 2)
    torch.save(model.state_dict(), "model.pt")
    ```

    ## Fix safety
    Unsafe: the file now holds a state dict, so the code that loads it must build the model
    first and call `model.load_state_dict(torch.load(path))` instead of using the loaded
    object directly.
    """

    code = "TL603"
    preview = True
    name = "save-whole-model"
    triggers = ("save",)
    # is_layer_call: a torch.nn class or a local subclass of nn.Module / LightningModule;
    # a torch import; a way to call torch.save (see torch_function)
    patterns = (r"\btorch\b",
                torch_function("save"),
                r"\b(?:nn|LightningModule)\b")
    message = "torch.save() of a whole module pickles its class; save {name}.state_dict() instead"
    fix_safety = "unsafe"
    fix_title = "Save the state_dict()"

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualified_name(node.func) not in SAVE_FUNCTIONS:
            return
        arg = get_arg(node, "obj", 0)
        if arg is None or not is_module_value(self.context, arg.value):
            return
        text = receiver_text(arg.value)
        fix = Fix.unsafe(NodeEdit(arg.value, f"{text}.state_dict()"))
        self.report(arg.value, fix=fix, name=text if len(text) <= 30 else "model")
