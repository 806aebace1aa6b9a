from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import get_arg, has_keyword, has_star_args
from torchlint.analysis.torch_releases import (
    LOAD_WEIGHTS_ONLY,
    LOAD_WEIGHTS_ONLY_BY_DEFAULT,
    Releases,
    show,
)
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import with_keywords
from torchlint.rule import Rule
from torchlint.rules.patterns import torch_function
from torchlint.rules.serialization.files import (
    holds_numpy,
    loads_project_save,
    under_safe_globals,
)

LOAD_FUNCTIONS = frozenset({"torch.load", "torch.serialization.load"})


class LoadWithoutWeightsOnly(Rule):
    """## What it does
    Flags `torch.load(...)` calls that do not say `weights_only=`.

    ## Why is this bad?
    A checkpoint file is a pickle. Before torch 2.6, `torch.load` unpickles it whole unless
    told `weights_only=True`, and unpickling may run any Python code the file's author put
    inside, so a downloaded or shared checkpoint can take over the machine. Passing
    `weights_only=False` on purpose is accepted as a conscious choice, and so is a load
    inside `with torch.serialization.safe_globals([...])`, which only serves the
    weights-only unpickler. A file that loads what
    it saved itself (`torch.save(..., path)` and `torch.load(path)` with the same path in the
    same file, as when the best model is reloaded after training, or paths formatted from
    the same template, as in `"G_%d.pth" % epoch` when a run resumes) reads no stranger's
    pickle and is left alone, as is a file of NumPy arrays (the result read by
    `torch.from_numpy` or `.numpy()`), which the weights-only unpickler would refuse.

    Preview: on real code 18 of 25 sampled findings were true; the rest loaded files the
    project writes itself through a path one file cannot connect to its save (a helper's
    parameter, a preprocessing step's output, a whole model saved elsewhere).

    From torch 2.6 on, `weights_only=True` is the default, so the call is safe as written
    there: for a project whose oldest supported torch is 2.6 or newer the rule is silent.
    Before 1.13 the argument does not exist, so the rule is silent for such a project too
    (nothing it could suggest would run there). Set `target-torch` (or declare your torch
    requirement) to let it know; when the target is unknown it reports, since the code may
    still meet a release before 2.6.

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
    preview = True
    name = "load-without-weights-only"
    triggers = ("load",)
    # a torch import; a way to call torch.load (see torch_function)
    patterns = (r"\btorch\b",
                torch_function("load"))
    message = ("torch.load() without weights_only=; {before} it unpickles the file, which can "
               "run arbitrary code")
    fix_safety = "unsafe"
    # weights_only= exists from 1.13; from 2.6 it is True unless told otherwise
    applies_to = Releases(LOAD_WEIGHTS_ONLY.added, LOAD_WEIGHTS_ONLY_BY_DEFAULT,
                          "`weights_only=` appeared in 1.13 and is True by default from 2.6.")
    fix_title = "Pass weights_only=True"

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualified_name(node.func) not in LOAD_FUNCTIONS:
            return
        if has_keyword(node, "weights_only") or loads_project_save(self.context, node) \
                or under_safe_globals(self.context) or holds_numpy(self.context, node):
            return
        fix = None
        if get_arg(node, "pickle_module", 2) is None and not has_star_args(node):
            new = with_keywords(node, ("weights_only", cst.Name("True")))
            fix = Fix.unsafe(NodeEdit(node, self.context.code(new)))
        target = self.context.options.target_torch
        before = f"on torch {show(target)}" if target else (
            f"before torch {show(LOAD_WEIGHTS_ONLY_BY_DEFAULT)}")
        self.report(node, fix=fix, before=before)
