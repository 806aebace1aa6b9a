from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import iter_scope, parameters
from torchlint.analysis.tensor_facts import is_tensor_expression
from torchlint.analysis.training_objects import COMPILE, compiled_functions, text
from torchlint.engine.triage import api
from torchlint.rule import Rule

_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical",
                          "log"})
_LOGGER_NAMES = frozenset({"logger", "log", "_logger", "logging", "LOGGER", "_LOGGER"})
_SYNC_METHODS = frozenset({"item", "tolist"})
# tensor methods whose result describes the tensor, not its values: tests on them trace
_STATIC_METHODS = frozenset({"size", "dim", "numel", "ndimension", "is_contiguous",
                             "is_floating_point", "is_complex", "element_size", "get_device"})
_STATIC_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "requires_grad",
                                "training", "layout", "is_sparse"})
_COMPILING_GUARDS = frozenset({
    "torch.compiler.is_compiling", "torch._dynamo.is_compiling", "torch.jit.is_scripting",
    "torch.jit.is_tracing", "torch.compiler.is_dynamo_compiling",
})


def _returns(body: cst.BaseSuite) -> bool:
    """The block ends with a ``return`` (or ``raise``)."""
    statements = getattr(body, "body", ())
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return isinstance(last.body[-1], (cst.Return, cst.Raise))
    return isinstance(last, (cst.Return, cst.Raise))


class CompileGraphBreak(Rule):
    """## What it does
    Flags, in a function decorated with `@torch.compile` or the `forward` of a module class
    whose instance the file passes to `torch.compile`: `print(...)`, logging calls,
    `.item()`, `.tolist()`, and `if`/`while` tests on a tensor's values. Code under a
    `torch.compiler.is_compiling()` guard is left alone.

    ## Why is this bad?
    Each of these makes TorchDynamo stop tracing (a "graph break"): the function runs as
    several compiled pieces with Python in between, losing much of the speed-up
    `torch.compile` was added for, and with `fullgraph=True` it raises instead. A test on a
    tensor's values also forces a device synchronisation every call.

    ## Example
    ```python
    import torch

    @torch.compile
    def step(x, w):
        y = x @ w
        print("norm", y.norm().item())
        return y.relu()
    ```

    Use instead:
    ```python
    import torch

    @torch.compile
    def step(x, w):
        y = x @ w
        return y.relu()
    ```

    ## Fix safety
    No fix: the logging or the branch must move out of the compiled region, or be
    rewritten with tensor operations (`torch.where`), which only the author can decide.
    """

    code = "TL311"
    name = "compile-graph-break"
    preview = True
    message = "{what} inside code compiled by torch.compile breaks the graph: {why}"
    triggers = ("compile",)
    patterns = (r"\btorch\b",)
    requires = api(*COMPILE)  # a call of torch.compile, or @torch.compile

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        ctx = self.context
        if id(node) not in compiled_functions(ctx):
            return
        tensors = self._tensor_names(node)
        guarded = self._guarded(node)
        for child in iter_scope(node.body):
            if id(child) in guarded:
                continue
            if isinstance(child, cst.Call):
                what = self._breaking_call(child)
                if what is not None:
                    self.report(child, what=what, why="the compiled region is split at it")
            elif isinstance(child, (cst.If, cst.While)) and self._on_values(child.test, tensors):
                self.report(child.test, what=f"testing a tensor's values ('{ctx.code(child.test)}')",
                            why="Python must read the value, so tracing stops here")

    def _breaking_call(self, call: cst.Call) -> str | None:
        func = call.func
        if isinstance(func, cst.Name) and self.context.qualified_name(func) == "builtins.print":
            return "print()"
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in _SYNC_METHODS and not call.args:
                return f".{method}()"
            receiver = func.value
            if method in _LOG_METHODS and isinstance(receiver, (cst.Name, cst.Attribute)) and (
                    text(receiver).rsplit(".", 1)[-1] in _LOGGER_NAMES):
                return f"logging call '{text(func)}()'"
        return None

    def _guarded(self, function: cst.FunctionDef) -> set[int]:
        """The nodes under an ``if torch.compiler.is_compiling()`` test (either branch), and
        the statements after such an ``if`` that returns (only eager code reaches them)."""
        guarded: set[int] = set()
        for block in iter_scope(function):
            if not isinstance(block, cst.IndentedBlock):
                continue
            after = False
            for stmt in block.body:
                if after:
                    guarded |= {id(n) for n in iter_scope(stmt)}
                elif isinstance(stmt, cst.If) and any(
                        isinstance(n, cst.Call) and self.context.qualified_name(n.func)
                        in _COMPILING_GUARDS for n in iter_scope(stmt.test)):
                    guarded |= {id(n) for n in iter_scope(stmt)}
                    after = _returns(stmt.body)
        return guarded

    def _tensor_names(self, function: cst.FunctionDef) -> set[str]:
        """Parameters without a default (``self`` aside) and names assigned a tensor op."""
        names = {p.name.value for p in parameters(function, stars=False)
                 if p.default is None and p.name.value not in ("self", "cls")}
        for node in iter_scope(function.body):
            if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(
                    node.targets[0].target, cst.Name):
                name = node.targets[0].target.value
                if self._tensor_valued(node.value, names):
                    names.add(name)
                else:
                    names.discard(name)
        return names

    def _tensor_valued(self, node: cst.BaseExpression, tensors: set[str]) -> bool:
        if isinstance(node, cst.Name):
            return node.value in tensors
        if isinstance(node, cst.BinaryOperation):
            return self._tensor_valued(node.left, tensors) or self._tensor_valued(
                node.right, tensors)
        if isinstance(node, cst.UnaryOperation):
            return self._tensor_valued(node.expression, tensors)
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute):
                if node.func.attr.value in _STATIC_METHODS:
                    return False
                if self._tensor_valued(node.func.value, tensors):
                    return True
                if text(node.func.value) == "self" and any(
                        self._tensor_valued(a.value, tensors) for a in node.args):
                    return True  # a layer of the module applied to a tensor
            return is_tensor_expression(self.context, node)
        return False

    def _on_values(self, test: cst.BaseExpression, tensors: set[str]) -> bool:
        if isinstance(test, cst.BooleanOperation):
            return self._on_values(test.left, tensors) or self._on_values(test.right, tensors)
        if isinstance(test, cst.UnaryOperation):
            return self._on_values(test.expression, tensors)
        if isinstance(test, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn))
                   for c in test.comparisons):
                return False
            return self._tensor_valued(test.left, tensors) or any(
                self._tensor_valued(c.comparator, tensors) for c in test.comparisons)
        return self._tensor_valued(test, tensors)
