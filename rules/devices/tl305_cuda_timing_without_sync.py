from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.cuda_use import file_uses_cuda, mentions_cuda
from torchlint.analysis.nodes import (
    has_keyword,
    iter_calls,
    iter_nodes,
    iter_scope,
    last_name_part,
    method_call,
    own_callee,
    target_names,
)
from torchlint.analysis.torch_facts import is_layer_name, is_loss_call, is_model_name
from torchlint.engine.triage import calls, check
from torchlint.rule import Rule
from torchlint.rules.devices.cuda import is_device_move

_CLOCKS = frozenset({"time.time", "time.perf_counter", "time.perf_counter_ns", "time.time_ns",
                     "time.monotonic", "time.monotonic_ns"})
_BLOCKS = (cst.Module, cst.IndentedBlock, cst.SimpleStatementLine, cst.SimpleStatementSuite)
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
# methods that wait for the GPU (or copy its results to the host, which waits)
_SYNC_METHODS = frozenset({"synchronize", "item", "cpu", "numpy", "tolist", "elapsed_time"})
_SYNC_BUILTINS = frozenset({"builtins.float", "builtins.int", "builtins.bool", "builtins.print"})
# torch namespaces and functions that do not launch GPU work
_HOST_ONLY_PREFIXES = ("torch.cuda.", "torch.utils.", "torch.distributed.", "torch.backends.",
                       "torch.optim.", "torch.jit.", "torch.onnx.", "torch.profiler.",
                       "torch.autograd.profiler.", "torch.hub.", "torch.multiprocessing.",
                       "torch.amp.", "torch.nn.init.", "torch.nn.utils.", "torch.testing.")
_HOST_ONLY = frozenset(f"torch.{name}" for name in (
    "device", "dtype", "no_grad", "enable_grad", "inference_mode", "set_grad_enabled",
    "autocast", "save", "load", "manual_seed", "seed", "set_num_threads", "get_num_threads",
    "compile", "is_tensor", "is_grad_enabled", "get_default_dtype", "set_default_dtype",
    "set_printoptions", "use_deterministic_algorithms", "set_float32_matmul_precision",
    "Generator", "Size", "finfo", "iinfo", "set_default_device",
))
# tensors built from host data, on the host unless a device is given
_HOST_CONSTRUCTORS = frozenset(f"torch.{name}" for name in (
    "tensor", "as_tensor", "from_numpy", "asarray", "Tensor", "FloatTensor", "LongTensor",
    "IntTensor", "ByteTensor", "BoolTensor", "DoubleTensor", "HalfTensor", "frombuffer",
    "numel", "is_floating_point", "get_rng_state", "set_rng_state",
))


class CudaTimingWithoutSync(Rule):
    """## What it does
    Flags a `time.time()` / `time.perf_counter()` stop timestamp taken right after GPU work,
    in a file that uses CUDA, with no `torch.cuda.synchronize()` in between.

    It does not flag a stop timestamp inside a loop (a running total for an ETA, or one step
    of a loop that repeats the same work, where the launch queue fills and a step's wall
    time is the GPU's), a loop that copies data to the device with a blocking `.to(device)`
    each step (each copy waits for the previous step, so the stop is at most one step
    early), a stop taken after something in the same statement already waited
    (`f"{loss.item()} {time.time() - t0}"`, a tensor formatted in an earlier f-string
    field), a span that already waits (`.item()`, `float(loss)`, or a call of a function
    of the file that does, such as an `evaluate()` returning `acc.item()`), nor host-only
    work (another framework's `add_model`, building on the CPU). Only GPU work on the timed
    path counts: a function that neither mentions CUDA, moves anything to a device nor
    names a device, and that times work on tensors or models it made itself, times the
    CPU, even in a file that uses CUDA elsewhere.

    ## Why is this bad?
    CUDA kernels run asynchronously: a model call returns as soon as its kernels are queued,
    long before the GPU has finished them. A wall-clock timestamp taken right after measures
    how long it took to launch the work, not to run it, so benchmarks look far faster than
    they are and comparisons between models are meaningless. Call
    `torch.cuda.synchronize()` (or read a result with `.item()`) before taking the stop
    time, or time with `torch.cuda.Event(enable_timing=True)`.

    ## Example
    ```python
    import time
    import torch

    def benchmark(model, batch):
        batch = batch.cuda()
        start = time.perf_counter()
        output = model(batch)
        elapsed = time.perf_counter() - start
        return output, elapsed
    ```

    Use instead:
    ```python
    import time
    import torch

    def benchmark(model, batch):
        batch = batch.cuda()
        torch.cuda.synchronize()
        start = time.perf_counter()
        output = model(batch)
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        return output, elapsed
    ```

    ## Fix safety
    No fix: where the synchronisation belongs (and whether event timing is better) is the
    author's choice.
    """

    code = "TL305"
    name = "cuda-timing-without-sync"
    triggers = ("time",)
    # the time module is imported, and the file mentions cuda (maybe as a string escape)
    patterns = (r"\bimport\b[^\n]*(?:\btime\b|\\\r?$)|\bfrom[\s\\]+time\b", r"cuda|\\[xuUN0-7\r\n]")
    requires = calls(*_CLOCKS) & check("torchlint.rules.devices.screens:may_flag_tl305")
    message = ("stop timestamp `{clock}()` taken after CUDA work without "
               "`torch.cuda.synchronize()`; it measures kernel launches, not their run time")

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.context.qualified_name(node.func)
        if qual not in _CLOCKS or not self._is_stop(node):
            return
        if self.context.loops():
            # stop inside a loop: either a running total since a start before the loop (an
            # ETA), or one step of a loop that repeats the same work (once the launch queue
            # is full, a step's wall time is the GPU's); both are faithful enough
            return
        preceding = self._preceding(node)
        if preceding is None:
            return
        if self._synced_earlier_in_statement(node):
            return
        started = pending = synced = False
        timed: list[cst.CSTNode] = []
        for part in preceding:
            if self._contains_clock(part):
                started, pending, synced = True, False, False
                timed = []
            elif started:
                if self._contains_sync(part) or (
                        isinstance(part, (cst.For, cst.While)) and self._copies_each_step(part)):
                    synced = True
                elif self._contains_work(part):
                    pending = True
                    timed.append(part)
        # any wait for the GPU since the start (e.g. `loss.item()` every step) keeps the
        # measurement anchored; only a start-work-stop span with no wait at all is reported
        if started and pending and not synced and file_uses_cuda(self.context) and (
                self._gpu_on_path(timed)):
            self.report(node, clock=qual)

    def _gpu_on_path(self, timed: list[cst.CSTNode]) -> bool:
        """May the timed work run on the GPU? Not when its function (with the functions of
        the file it calls) neither mentions CUDA, moves anything to a device nor names a
        device (``device``, ``args.gpu``, ``self.device``), and the timed work only reads
        what the function made itself: tensors and models built on the host, whatever the
        rest of the file does. Work on a parameter, an attribute or a global may be on
        the GPU."""
        ctx = self.context
        function = ctx.current_function
        if function is None:
            return True  # module level: the file uses CUDA
        def places() -> bool:
            return _places_on_gpu(ctx, function) or any(
                _places_on_gpu(ctx, callee) for callee in self._callees(function))
        if ctx.cached(("tl305_places_on_gpu", id(function)), places):
            return True
        made_here = ctx.cached(("tl305_made_here", id(function)),
                               lambda: _made_in(function))
        for part in timed:
            for call in self._calls(part):
                for name in _names_read(call):
                    if name.value not in made_here and ctx.qualified_name(name) is None:
                        return True  # a parameter, a global or self: may live on the GPU
        return False

    def _callees(self, function: cst.FunctionDef) -> list[cst.FunctionDef]:
        """The functions (and methods) of the file that ``function`` calls by name."""
        names = {name for call in iter_calls(function.body)
                 if (name := own_callee(call.func)) is not None}
        return [d for d in self.context.definitions()
                if isinstance(d, cst.FunctionDef) and d.name.value in names and d is not function]

    def _is_stop(self, node: cst.Call) -> bool:
        """``clock() - start``, or ``end = clock()`` with ``end - ...`` later in the scope."""
        parent = self.context.parent(node)
        if isinstance(parent, cst.BinaryOperation) and parent.left is node and \
                isinstance(parent.operator, cst.Subtract):
            return True
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and
                isinstance(parent.targets[0].target, cst.Name)):
            return False
        name = parent.targets[0].target.value
        scope = self.context.current_function or self.context.module
        return name in self.context.cached(("subtracted_names", id(scope)),
                                           lambda: _subtracted_names(scope))

    def _synced_earlier_in_statement(self, node: cst.Call) -> bool:
        """In the statement that takes the stop time, something evaluated before it waits
        for the GPU: ``f"{loss.item()} {time.time() - t0}"``, or a tensor formatted in an
        earlier f-string field (``f"{loss:.4f} {time.time() - t0}"`` calls ``.item()``)."""
        statement = next((a for a in reversed(self.context.ancestors)
                          if isinstance(a, cst.BaseSmallStatement)), None)
        if statement is None:
            return False
        enclosing = {id(a) for a in self.context.ancestors}
        for inner in iter_scope(statement):
            if inner is node:
                return False
            if id(inner) in enclosing:
                continue  # print(..., clock() - t0) waits only after its arguments
            if isinstance(inner, cst.FormattedStringExpression) and inner.format_spec and (
                    isinstance(inner.expression, (cst.Name, cst.Attribute, cst.Subscript))):
                return True
            if isinstance(inner, cst.Call) and self._contains_sync(inner):
                return True
        return False

    # ------------------------------------------------------------ order
    def _preceding(self, node: cst.Call) -> list[cst.CSTNode] | None:
        """What runs before ``node`` in its function, oldest first; None when unclear."""
        ancestors = self.context.ancestors
        index = len(ancestors) - 1
        statement = None
        for i in range(index - 1, -1, -1):
            if isinstance(ancestors[i], (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                statement = ancestors[i]
                break
            if isinstance(ancestors[i], (cst.Lambda, cst.GeneratorExp, cst.ListComp,
                                         cst.SetComp, cst.DictComp)):
                return None
        if not isinstance(statement, cst.BaseSmallStatement):
            return None  # a loop or if header: runs again after its body, too unsure
        segments: list[Sequence[cst.CSTNode]] = []
        for i in range(index - 1, -1, -1):
            block, child = ancestors[i], ancestors[i + 1]
            if isinstance(block, _SCOPES):
                break
            if isinstance(block, _BLOCKS):
                body = list(block.body)
                position = next((k for k, s in enumerate(body) if s is child), None)
                if position is not None:
                    segments.append(body[:position])
            elif isinstance(block, (cst.If, cst.While)) and child is not block.test:
                segments.append([block.test])
            elif isinstance(block, cst.For) and child is not block.iter:
                segments.append([block.iter])
            elif isinstance(block, cst.With) and child is block.body:
                segments.append([item.item for item in block.items])
        return [part for segment in reversed(segments) for part in segment]

    # ------------------------------------------------------------ facts
    def _calls(self, node: cst.CSTNode) -> list[cst.Call]:
        if isinstance(node, _SCOPES):
            return []
        return [n for n in iter_scope(node) if isinstance(n, cst.Call)]

    def _contains_clock(self, node: cst.CSTNode) -> bool:
        return any(self.context.qualified_name(c.func) in _CLOCKS for c in self._calls(node))

    def _contains_sync(self, node: cst.CSTNode, follow: bool = True) -> bool:
        for call in self._calls(node):
            if follow and self._calls_syncing_function(call):
                return True
            qual = self.context.qualified_name(call.func)
            if qual in _SYNC_BUILTINS and call.args:
                return True
            if qual is not None and qual.startswith("torch.cuda.") and \
                    qual.endswith("synchronize"):
                return True
            if qual is None and method_call(call, *_SYNC_METHODS) is not None:
                return True
            attribute = method_call(call, "to")
            if attribute is not None and call.args and is_cpu(call.args[0].value):
                return True
        return False

    def _calls_syncing_function(self, call: cst.Call) -> bool:
        """``evaluate(net, loader)`` where every function of the file of that name waits for
        the GPU (``return acc.item() / n``, ``float(loss)``)."""
        name = own_callee(call.func)
        if name is None or self.context.qualified_name(call.func) is not None:
            return False
        defs = [d for d in self.context.definitions()
                if isinstance(d, cst.FunctionDef) and d.name.value == name]
        return bool(defs) and all(
            self.context.cached(("tl305_syncs", id(d)),
                                lambda d=d: self._contains_sync(d.body, follow=False))
            for d in defs)

    def _copies_each_step(self, loop: cst.For | cst.While) -> bool:
        """The loop copies data to the device with a blocking ``.to(device)``/``.cuda()``
        every step: that copy waits for the previous step's kernels, so a stop timestamp after
        the loop is at most one step early."""
        for call in self._calls(loop.body):
            if is_device_move(self.context, call) and not has_keyword(call, "non_blocking"):
                return True
        return False

    def _contains_work(self, node: cst.CSTNode) -> bool:
        ctx = self.context
        for call in self._calls(node):
            qual = ctx.qualified_name(call.func)
            if qual is not None:
                if qual.startswith("torch.") and qual not in _HOST_ONLY and \
                        not qual.startswith(_HOST_ONLY_PREFIXES) and not is_layer_name(qual) \
                        and not (qual in _HOST_CONSTRUCTORS and not has_keyword(call, "device")):
                    return True
                continue
            if method_call(call, "backward") is not None:
                return True
            # a copy from pageable host memory waits for the GPU; only an asynchronous one
            # (non_blocking=True) leaves work queued behind the timestamp
            if method_call(call, "cuda", "to") is not None and has_keyword(call, "non_blocking"):
                return True
            name = last_name_part(call.func)
            if name is not None and isinstance(call.func, (cst.Name, cst.Attribute)):
                # a model, or a module calling itself (``self(batch)`` in a LightningModule)
                if name in ("self", "module") or (is_model_name(name, ctx.options.model_names)
                                                   and not _handles_a_model(name)):
                    return True
            if is_loss_call(ctx, call):
                return True
        return False


# first words of method names that put a model somewhere rather than run it
# (``pipeline.add_model(model)``)
_CONTAINER_VERBS = frozenset({"add", "append", "insert", "remove", "attach", "detach", "del",
                              "delete", "pop", "replace", "swap", "parse", "find", "select"})


def _handles_a_model(name: str) -> bool:
    words = [w for w in name.lower().split("_") if w]
    return len(words) > 1 and words[0] in _CONTAINER_VERBS


_GPU_WORDS = ("cuda", "gpu", "device")


def _places_on_gpu(ctx: FileContext, function: cst.FunctionDef) -> bool:
    """``function`` mentions CUDA, moves something to a device, or names a device."""
    for node in iter_nodes(function):
        if mentions_cuda(node):
            return True
        if isinstance(node, cst.Call) and is_device_move(ctx, node):
            return True
        if isinstance(node, cst.Name) and any(w in node.value.lower() for w in _GPU_WORDS):
            return True
    return False


def _made_in(function: cst.FunctionDef) -> frozenset[str]:
    """Names the function binds itself (assignments, loops, withs), not its parameters."""
    params = {p.name.value for p in iter_nodes(function.params) if isinstance(p, cst.Param)}
    made: set[str] = set()
    for node in iter_scope(function.body):
        if isinstance(node, (cst.AssignTarget, cst.For, cst.AsName, cst.CompFor)):
            target = node.target if not isinstance(node, cst.AsName) else node.name
            made.update(target_names(target))
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.NamedExpr)):
            made.update(target_names(node.target))
    return frozenset(made - params)


def _names_read(root: cst.CSTNode) -> list[cst.Name]:
    """The names ``root`` reads: not the ``.attr`` of an attribute (``x.sum``) nor a
    keyword (``dim=``)."""
    nodes = list(iter_nodes(root))
    skipped = {id(n.attr) for n in nodes if isinstance(n, cst.Attribute)} | {
        id(n.keyword) for n in nodes if isinstance(n, cst.Arg) and n.keyword is not None}
    return [n for n in nodes if isinstance(n, cst.Name) and id(n) not in skipped]


def is_cpu(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString) and node.value.strip("'\"").startswith("cpu")


def _subtracted_names(scope: cst.CSTNode) -> frozenset[str]:
    """Names that are the left side of a subtraction (``end - start``) in ``scope``."""
    return frozenset(
        n.left.value for n in iter_scope(scope)
        if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Subtract)
        and isinstance(n.left, cst.Name))
