from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from torchlint.analysis.nodes import get_arg, iter_scope, method_call, string_value
from torchlint.engine.triage import check
from torchlint.rule import Rule
from torchlint.rules.devices.cuda import initialises_cuda

_VARIABLE = "CUDA_VISIBLE_DEVICES"
_BLOCKS = (cst.Module, cst.IndentedBlock, cst.SimpleStatementLine, cst.SimpleStatementSuite)
_DEFINITIONS = (cst.FunctionDef, cst.ClassDef)
_LAUNCHERS = ("subprocess.", "os.system", "os.popen", "os.exec", "os.spawn", "os.posix_spawn",
              "multiprocessing.", "torch.multiprocessing.", "torch.distributed.run",
              "torch.distributed.launch", "ray.", "submitit.")


class CudaVisibleDevicesAfterInit(Rule):
    """## What it does
    Flags a `CUDA_VISIBLE_DEVICES` assignment in `os.environ` that runs after the same
    function or script has already started CUDA.

    ## Why is this bad?
    The CUDA runtime reads `CUDA_VISIBLE_DEVICES` once, when it is initialised. Calls
    such as `torch.cuda.is_available()`, `torch.cuda.device_count()`, `x.cuda()` or creating
    a tensor with `device="cuda"` initialise it; setting the variable afterwards changes
    nothing, and the program silently keeps using every GPU (or the wrong one). Set the
    variable before any CUDA call, ideally before importing the code that uses the GPU.
    Building `torch.device("cuda")` alone does not initialise CUDA.

    ## Example
    ```python
    import os
    import torch

    print(torch.cuda.device_count())
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    model = torch.nn.Linear(4, 4).cuda()
    ```

    Use instead:
    ```python
    import os
    import torch

    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    print(torch.cuda.device_count())
    model = torch.nn.Linear(4, 4).cuda()
    ```

    ## Fix safety
    No fix: the assignment has to move above the first CUDA call, and that call may be
    far away or inside code that needs reordering by hand.
    """

    code = "TL303"
    name = "cuda-visible-devices-after-init"
    triggers = ("CUDA_VISIBLE_DEVICES",)
    # the variable is set through os.environ[...] / .setdefault / .update, or os.putenv
    patterns = (r"\b(?:environ|putenv)\b",)
    requires = check("torchlint.rules.devices.screens:may_flag_tl303")
    message = "CUDA_VISIBLE_DEVICES is set after {call} initialised CUDA; it has no effect"

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if self._is_environ_key(target.target):
                self._check(target.target, node)

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.context.qualified_name(node.func)
        if qual in ("os.environ.setdefault", "os.putenv"):
            key = get_arg(node, None, 0)
            if key is not None and string_value(key.value) == _VARIABLE:
                self._check(node, node)
        elif qual == "os.environ.update":
            if self._update_sets_variable(node):
                self._check(node, node)

    def _is_environ_key(self, target: cst.BaseExpression) -> bool:
        if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
            return False
        if self.context.qualified_name(target.value) != "os.environ":
            return False
        index = target.slice[0].slice
        return isinstance(index, cst.Index) and string_value(index.value) == _VARIABLE

    @staticmethod
    def _update_sets_variable(call: cst.Call) -> bool:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == _VARIABLE:
                return True
            if arg.keyword is None and isinstance(arg.value, cst.Dict):
                for element in arg.value.elements:
                    if isinstance(element, cst.DictElement) and \
                            string_value(element.key) == _VARIABLE:
                        return True
        return False

    def _check(self, node: cst.CSTNode, anchor: cst.CSTNode) -> None:
        if self._starts_processes():
            return  # the variable is meant for child processes, which read it afresh
        for call in self._earlier_calls(anchor):
            if initialises_cuda(self.context, call):
                self.report(node, call=_describe(call))
                return

    def _starts_processes(self) -> bool:
        """The enclosing function (or module) launches processes: ``subprocess.Popen``,
        ``os.system``, ``multiprocessing``, ``torch.multiprocessing.spawn``."""
        ctx = self.context
        scope: cst.CSTNode = ctx.current_function or ctx.module
        for inner in iter_scope(scope):
            if isinstance(inner, cst.Call):
                qual = ctx.qualified_name(inner.func) or ""
                if qual.startswith(_LAUNCHERS):
                    return True
        return False

    def _earlier_calls(self, node: cst.CSTNode) -> Iterator[cst.Call]:
        """Calls that run before ``node`` in the statement order of its function or module."""
        ancestors = self.context.ancestors
        index = len(ancestors) - 1
        while index >= 0 and ancestors[index] is not node:
            index -= 1
        if index < 0:
            return
        for i in range(index - 1, -1, -1):
            block, child = ancestors[i], ancestors[i + 1]
            if isinstance(block, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return
            if isinstance(block, _BLOCKS):
                yield from _calls_before(block.body, child)
            elif isinstance(block, (cst.If, cst.While)) and child is not block.test:
                yield from _calls_in(block.test)
            elif isinstance(block, cst.For) and child is not block.iter:
                yield from _calls_in(block.iter)
            elif isinstance(block, cst.With) and child is block.body:
                for item in block.items:
                    yield from _calls_in(item.item)


def _calls_before(body: Sequence[cst.CSTNode], child: cst.CSTNode) -> Iterator[cst.Call]:
    for stmt in body:
        if stmt is child:
            return
        if isinstance(stmt, _DEFINITIONS):
            continue
        yield from _calls_in(stmt)


def _calls_in(node: cst.CSTNode) -> Iterator[cst.Call]:
    for inner in iter_scope(node):
        if isinstance(inner, cst.Call):
            yield inner


def _describe(call: cst.Call) -> str:
    func = call.func
    parts: list[str] = []
    while isinstance(func, cst.Attribute):
        parts.append(func.attr.value)
        func = func.value
    if isinstance(func, cst.Name):
        parts.append(func.value)
    else:
        attribute = method_call(call)
        return f"`.{attribute.attr.value}()`" if attribute is not None else "a CUDA call"
    return f"`{'.'.join(reversed(parts))}()`"
