from __future__ import annotations

from torchlint.engine.triage import check, self_store
from torchlint.rules.modules.container_rule import UnregisteredContainerRule, container_pattern


class ModuleListNotRegistered(UnregisteredContainerRule):
    """## What it does
    Flags a plain Python list of layers stored as an attribute of an `nn.Module`
    (a list literal, a comprehension, `list(...)`, or an empty list filled with
    `.append`/`.extend`/`.insert`/`+=`).

    A list whose layers are registered one by one is a shortcut, not a bug, and is not
    flagged: the list or its items (`self.heads[-1]`, `self.heads[i]`, the appended local)
    handed to `self.add_module(...)`, `self.register_module(...)` or `setattr(self, ...)`,
    or the list passed to `nn.Sequential(*...)`/`nn.ModuleList(...)` or a project helper.

    ## Why is this bad?
    `nn.Module` only registers submodules assigned directly as attributes or held in
    its own containers. Layers inside a plain list are invisible to it: their weights
    are missing from `parameters()` (so the optimizer never updates them), from
    `state_dict()` (so checkpoints silently lack them), and `.to(device)`/`.cuda()`
    leave them behind. `nn.ModuleList` behaves like a list and registers every entry.

    ## Example
    ```python
    import torch.nn as nn


    class Tower(nn.Module):
        def __init__(self, width, depth):
            super().__init__()
            self.blocks = [nn.Linear(width, width) for _ in range(depth)]
            self.heads = []
            for _ in range(3):
                self.heads.append(nn.Linear(width, 1))
    ```

    Use instead:
    ```python
    import torch.nn as nn


    class Tower(nn.Module):
        def __init__(self, width, depth):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
            self.heads = nn.ModuleList()
            for _ in range(3):
                self.heads.append(nn.Linear(width, 1))
    ```

    ## Fix safety
    Safe: the list becomes an `nn.ModuleList` holding the same layers in the same order,
    and indexing, iteration, `len`, `append`, `extend`, `insert` and `+=` keep working.
    The layers now appear in `parameters()` and `state_dict()`, which is the point.
    No fix is offered when an entry might not be a module, or when the attribute is
    used with a list method `nn.ModuleList` lacks (`sort`, `remove`, `index`...).
    The file's own name for `torch.nn` is used; an import is added only if it has none.
    """

    code = "TL101"
    name = "module-list-not-registered"
    # the module class is the ast trigger's to decide: a base from the project may be one
    # without the file spelling "Module"
    triggers = ("self",)
    # a module class (nn.Module/LightningModule base); `self.X =`; a list made by `= [...]`
    # (or `= ([...])`), by `= list(...)`/`= builtins.list(...)`, or by an alias `list as L`
    patterns = (r"\bself\b",
                container_pattern("[", "list"))
    # a list stored on self by a method that may construct a layer (the list holds one)
    requires = self_store("list", layers=True) & check(
        "torchlint.rules.modules.screens:may_flag_tl101")
    message = ("layers held in a plain list `self.{attr}` are not registered with the module; "
               "use nn.ModuleList")
    fix_safety = "safe"
    fix_title = "Use nn.ModuleList"
    kind = "list"
    container = "ModuleList"
