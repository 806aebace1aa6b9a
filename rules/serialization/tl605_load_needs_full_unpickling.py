from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import get_arg, has_star_args, is_literal_true
from torchlint.analysis.torch_releases import LOAD_WEIGHTS_ONLY, LOAD_WEIGHTS_ONLY_BY_DEFAULT
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import calls, check
from torchlint.fix.edits import with_keywords
from torchlint.rule import Rule
from torchlint.rules.patterns import torch_function
from torchlint.rules.serialization.files import (
    SAVE_FUNCTIONS,
    adds_safe_globals,
    load_keys,
    project_saves,
    refused_content,
    save_keys,
    shared_key,
    under_safe_globals,
)

LOAD_FUNCTIONS = frozenset({"torch.load", "torch.serialization.load"})


@dataclass
class _Load:
    node: cst.Call
    keys: frozenset[str]
    shared: str | None  # the path as another file of the project may name it
    fix: Fix | None


class LoadNeedsFullUnpickling(Rule):
    """## What it does
    Flags `torch.load(path)` (with no `weights_only=`, or `weights_only=True`) where the
    same file, or another script or notebook of its folder (`train.py` beside
    `evaluate.py`), saves, to
    the same path, a checkpoint that the weights-only unpickler refuses: a whole module (`torch.save(model, path)`), an `argparse.Namespace` (`{"args":
    args}` with `args` from `parse_args()`), an instance of one of the project's own
    classes (a dataclass of settings, say), an optimizer or scheduler object rather than
    its `state_dict()`, or a NumPy array (`np.zeros(n)`, `np.sin(x).astype("float64")`).

    ## Why is this bad?
    From torch 2.6 on, `torch.load` defaults to `weights_only=True`: it rebuilds only
    tensors, numbers, strings and containers of them, plus the few classes torch allows.
    Loading a checkpoint that pickles anything else raises `UnpicklingError` ("Weights only
    load failed ... Unsupported global"): resuming training, or evaluating the saved model,
    breaks as soon as the project moves to a current torch, often long after the
    checkpoints were written. The save and the load are matched the way TL601 matches them:
    the same path, a path formatted from the same template, or the path returned by the
    same function or method of the file (`checkpoint_path(run)`). In the other scripts of
    the folder (where a relative path names the same file), a save counts when its path is
    the same literal (`"ckpt/model.pth"`, `os.path.join("ckpt", "model.pth")`, also through
    a variable or `with open(path, "wb") as f`), the same template (`f"ckpt/epoch_{n}.pth"`
    and `"ckpt/epoch_%d.pth" % n`), or the same constant imported from the project (`from
    config import CKPT`); only the scripts whose text names the path are parsed. Scripts
    in other folders are not searched: two programs run from different places may mean
    different files by one relative path. A load inside `with torch.serialization.safe_globals([...])`, or in a file that
    calls `torch.serialization.add_safe_globals(...)`, has said what it trusts and is left
    alone. TL601's advice (`weights_only=True`) would break these loads: TL601 is silent
    on them.

    For a project whose torch target is older than 2.6 the finding is a preview one: the
    load works there and breaks on upgrade.

    ## Example
    ```python
    import torch
    from torch import nn

    model = nn.Linear(8, 2)
    torch.save(model, "model.pt")
    model = torch.load("model.pt")
    ```

    Use instead:
    ```python
    import torch
    from torch import nn

    model = nn.Linear(8, 2)
    torch.save(model, "model.pt")
    model = torch.load("model.pt", weights_only=False)
    ```

    ## Fix safety
    Unsafe: `weights_only=False` unpickles the file whole, which runs whatever code the
    file asks for. That is the behaviour the code had before torch 2.6, and acceptable only
    for files this project writes itself (as the matched save shows); a checkpoint that
    may come from elsewhere should instead be saved as a `state_dict()` (see TL603), or
    loaded under `torch.serialization.safe_globals([...])` listing the classes it needs.
    No fix is offered for a target older than 1.13, which has no `weights_only=`.
    """

    code = "TL605"
    name = "load-needs-full-unpickling"
    triggers = ("load",)
    # a torch import; a way to call torch.load (see torch_function); the save may be in
    # another file
    patterns = (r"\btorch\b", torch_function("load"))
    requires = calls(*LOAD_FUNCTIONS) & check(
        "torchlint.rules.serialization.screens:may_flag_tl605")
    message = ("torch.load() of a file {saver} saves with {what} in it: the weights-only "
               "unpickler (the default from torch 2.6) refuses it; pass weights_only=False "
               "(only for files this project writes)")
    fix_safety = "unsafe"
    fix_title = "Pass weights_only=False"

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._refused: dict[str, str] = {}
        self._loads: list[_Load] = []

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.context.qualified_name(node.func)
        if qual in SAVE_FUNCTIONS:
            self._note_save(node)
        elif qual in LOAD_FUNCTIONS:
            self._note_load(node)

    def _note_save(self, node: cst.Call) -> None:
        key = save_keys(self.context).get(id(node))
        saved = get_arg(node, "obj", 0)
        if key is None or saved is None or key in self._refused:
            return
        what = refused_content(self.context, saved.value)
        if what is not None:
            self._refused[key] = what

    def _note_load(self, node: cst.Call) -> None:
        given = get_arg(node, "weights_only")
        if given is not None and not is_literal_true(given.value) or has_star_args(node):
            return
        if under_safe_globals(self.context):
            return
        keys = load_keys(self.context, node)
        source = get_arg(node, "f", 0)
        shared = shared_key(self.context, source.value) if source is not None else None
        if keys or shared is not None:
            self._loads.append(_Load(node, keys, shared, self._fix(node, given)))

    def _fix(self, node: cst.Call, given: cst.Arg | None) -> Fix | None:
        target = self.context.options.target_torch
        if target is not None and LOAD_WEIGHTS_ONLY.added is not None \
                and target < LOAD_WEIGHTS_ONLY.added:
            return None
        if given is not None:
            return Fix.unsafe(NodeEdit(given.value, "False"))
        if get_arg(node, "pickle_module", 2) is not None:
            return None
        return Fix.unsafe(NodeEdit(node, self.context.code(
            with_keywords(node, ("weights_only", cst.Name("False"))))))

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self._loads or adds_safe_globals(self.context):
            return
        target = self.context.options.target_torch
        older = target is not None and target < LOAD_WEIGHTS_ONLY_BY_DEFAULT
        for load in self._loads:
            saver = "this code"
            what = next((self._refused[k] for k in sorted(load.keys) if k in self._refused),
                        None)
            if what is None and load.shared is not None:
                saver, what = next(((f"the project's {name}", found) for name, found
                                    in project_saves(self.context, load.shared)
                                    if found is not None), (saver, None))
            if what is not None:
                self.report(load.node, fix=load.fix, preview=older, what=what, saver=saver)
