from __future__ import annotations

import libcst as cst

from torchlint.analysis.cuda_use import file_uses_cuda
from torchlint.analysis.nodes import get_arg, has_star_args
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import calls, check
from torchlint.fix.edits import with_first_argument
from torchlint.rule import Rule

# the device-neutral autocast: its first parameter, device_type, has no default
# (torch.cuda.amp.autocast and torch.cpu.amp.autocast fix the device themselves)
NEUTRAL_AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast",
                              "torch.amp.autocast_mode.autocast"})


class AutocastWithoutDeviceType(Rule):
    """## What it does
    Flags calls of `torch.autocast(...)` / `torch.amp.autocast(...)` (through any alias,
    `from torch.amp import autocast` included) that give no `device_type`, neither as the
    first positional argument nor by keyword.

    ## Why is this bad?
    Unlike `torch.cuda.amp.autocast`, the device-neutral `autocast` has no default device:
    `device_type` is a required argument, and leaving it out raises
    `TypeError: autocast.__init__() missing 1 required positional argument: 'device_type'`.
    The mistake usually comes with a port from the deprecated `torch.cuda.amp.autocast`
    (same name, same keywords), and it stays hidden until the mixed-precision path runs,
    often the first time a flag such as `--amp` is switched on.
    `torch.cuda.amp.autocast(...)` and `torch.cpu.amp.autocast(...)` name their device and
    are not flagged here (TL703 and TL717 report their deprecation).

    ## Example
    ```python
    import torch

    def step(model, x, amp):
        with torch.amp.autocast(enabled=amp):
            return model(x.cuda())
    ```

    Use instead:
    ```python
    import torch

    def step(model, x, amp):
        with torch.amp.autocast(device_type="cuda", enabled=amp):
            return model(x.cuda())
    ```

    ## Fix safety
    Unsafe: the fix passes `device_type="cuda"` when the file uses CUDA anywhere (`.cuda()`,
    `torch.cuda`, a `"cuda"` device) and `device_type="cpu"` when it never does. That is a
    guess at the device the region runs on: a file that moves its model elsewhere (a
    device chosen at run time, `"mps"`, `"xpu"`) should pass its own device's type, as in
    `device_type=device.type`.
    """

    code = "TL222"
    name = "autocast-without-device-type"
    triggers = ("autocast",)
    patterns = (r"\btorch\b",)
    requires = calls(*NEUTRAL_AUTOCAST) & check(
        "torchlint.rules.training.step_screens:may_flag_tl222")
    message = "autocast() without device_type raises TypeError; pass device_type=\"{device}\""
    fix_safety = "unsafe"
    fix_title = "Pass device_type"

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualified_name(node.func) not in NEUTRAL_AUTOCAST:
            return
        if get_arg(node, "device_type", 0) is not None or has_star_args(node):
            return
        device = "cuda" if file_uses_cuda(self.context) else "cpu"
        new = with_first_argument(node, cst.SimpleString(f'"{device}"'), "device_type")
        self.report(node, fix=Fix.unsafe(NodeEdit(node, self.context.code(new))), device=device)

