from __future__ import annotations

from torchlint.engine.triage import check, self_store
from torchlint.rules.modules.container_rule import UnregisteredContainerRule, container_pattern


class ModuleDictNotRegistered(UnregisteredContainerRule):
    """## What it does
    Flags a plain Python dict of layers stored as an attribute of an `nn.Module`
    (a dict literal, a comprehension, or an empty dict filled by `self.X[key] = layer`
    or `.update({...})`).

    ## Why is this bad?
    Submodules kept in a plain dict are not registered: the module does not know they
    exist. Their weights are left out of `parameters()` (the optimizer never trains them)
    and out of `state_dict()` (checkpoints lose them), and `.to(device)` does not move
    them, which usually ends in a device-mismatch error. `nn.ModuleDict` works like a
    dict with string keys and registers every value.

    ## Example
    ```python
    from torch import nn


    class MultiHead(nn.Module):
        def __init__(self, tasks, width):
            super().__init__()
            self.heads = {name: nn.Linear(width, 1) for name in tasks}
            self.norms = {}
            self.norms["pre"] = nn.LayerNorm(width)
    ```

    Use instead:
    ```python
    from torch import nn


    class MultiHead(nn.Module):
        def __init__(self, tasks, width):
            super().__init__()
            self.heads = nn.ModuleDict({name: nn.Linear(width, 1) for name in tasks})
            self.norms = nn.ModuleDict()
            self.norms["pre"] = nn.LayerNorm(width)
    ```

    ## Fix safety
    Safe when offered: the dict becomes an `nn.ModuleDict` with the same entries.
    `nn.ModuleDict` only takes string keys without dots that do not clash with its own
    attributes (`"train"`, `"forward"`, `"keys"`...), so the fix is offered only when every
    key is a plain string literal of that kind (or an f-string), and the attribute is not
    used with a dict method `nn.ModuleDict` lacks (`get`, `setdefault`...). Otherwise the
    finding is reported without a fix.
    """

    code = "TL102"
    name = "module-dict-not-registered"
    # the module class is the ast trigger's to decide: a base from the project may be one
    # without the file spelling "Module"
    triggers = ("self",)
    # a module class (nn.Module/LightningModule base); `self.X =`; a dict made by `= {...}`
    # (or `= ({...})`), by `= dict(...)`/`= builtins.dict(...)`, or by an alias `dict as D`
    patterns = (r"\bself\b",
                container_pattern("{", "dict"))
    requires = self_store("dict") & check("torchlint.rules.modules.screens:may_flag_tl102")
    message = ("layers held in a plain dict `self.{attr}` are not registered with the module; "
               "use nn.ModuleDict")
    fix_safety = "safe"
    fix_title = "Use nn.ModuleDict"
    kind = "dict"
    container = "ModuleDict"
