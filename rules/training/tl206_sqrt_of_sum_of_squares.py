from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.grad_mode import in_no_grad
from torchlint.analysis.imports import index_for
from torchlint.analysis.nodes import code, iter_nodes, semantic_children
from torchlint.analysis.tensor_facts import plus_terms, square_base, sum_of_squares
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import import_cleanup, reference
from torchlint.rule import Rule

_REDUCTION_KEYWORDS = ("dim", "keepdim")


class SqrtOfSumOfSquares(Rule):
    """## What it does
    Flags `torch.sqrt(...)` or `.sqrt()` taken of a sum of squares, such as
    `torch.sqrt((x ** 2).sum(-1))` or `torch.sqrt(dx ** 2 + dy ** 2)`.

    Preview: even with the checks below, most findings on real code were in code no
    gradient flows through (data transforms, feature extraction, inference pipelines),
    which cannot be told from one file; 0 of 11 judged findings were bugs.

    Not flagged: radicands that cannot be 0 (a squared constant among the terms, as in the
    pseudo-Huber loss `sqrt(d ** 2 + c ** 2) - c`; `t ** 2 + (1 - t) ** 2`; an added
    epsilon); values never differentiated (under `no_grad`, or read only through `.item()`,
    `.numpy()`, `.tolist()`, `print`, `topk`, `argsort`...).

    ## Why is this bad?
    The derivative of `sqrt(s)` is `1 / (2 * sqrt(s))`, which is infinite at `s = 0`.
    Whenever the squared terms are all zero (identical points, a zero vector, padding)
    autograd multiplies that infinity by the zero gradient of the squares and produces
    `nan`, which then spreads to every parameter. `torch.linalg.vector_norm` computes the
    same value but defines the gradient at zero (as zero), and adding a small epsilon
    inside the square root also avoids the problem.

    ## Example
    ```python
    import torch

    a = torch.randn(8, 3, requires_grad=True)
    b = torch.randn(8, 3)
    distance = torch.sqrt(((a - b) ** 2).sum(dim=1))
    radius = torch.sqrt(a[:, 0] ** 2 + a[:, 1] ** 2)
    ```

    Use instead:
    ```python
    import torch

    a = torch.randn(8, 3, requires_grad=True)
    b = torch.randn(8, 3)
    distance = torch.linalg.vector_norm(a - b, dim=1)
    radius = torch.sqrt(a[:, 0] ** 2 + a[:, 1] ** 2 + 1e-12)
    ```

    ## Fix safety
    Unsafe, and only for the single-tensor form `(x ** 2).sum(dim)` (or `torch.sum(x ** 2,
    dim)`, `x.pow(2).sum()`): it becomes `torch.linalg.vector_norm(x, dim=...)`. Values agree
    up to rounding, but gradients at zero change from `nan` to zero, and for complex inputs
    the norm uses `abs(x) ** 2` where the original squared the values. Sums of several
    squared terms get no fix: choose between `torch.hypot`, `vector_norm` of a stacked
    tensor or an epsilon yourself.
    """

    code = "TL206"
    preview = True
    name = "sqrt-of-sum-of-squares"
    triggers = ("sqrt",)
    # torch.sqrt (any sqrt but math./np./numpy.sqrt, unless torch is imported as one) or `.sqrt()`
    patterns = (r"\bsqrt\b(?:(?<!\bmath\.sqrt)(?<!\bnp\.sqrt)(?<!\bnumpy\.sqrt)"
                r"|(?:[\s\\]|#[^\n\r]*[\r\n])*\((?:[\s\\]|#[^\n\r]*[\r\n])*\))"
                r"|\btorch[\s\\]+as[\s\\]+(?:math|np|numpy)\b",)
    message = "sqrt of a sum of squares has a NaN gradient at 0; {advice}"
    fix_safety = "unsafe"
    fix_title = "Use torch.linalg.vector_norm"


    def visit_Call(self, node: cst.Call) -> None:
        operand = self._sqrt_operand(node)
        if operand is None or in_no_grad(self.context) or self._never_differentiated(node):
            return
        reduction = sum_of_squares(self.context, operand)
        if reduction is not None:
            base, args = reduction
            self.report(node, advice="use torch.linalg.vector_norm",
                        fix=self._fix(node, base, args))
            return
        if isinstance(operand, cst.Name) and not operand.lpar:
            # sq = ((a - b) ** 2).sum(-1); d = sq.sqrt(): report, no fix (sq may be reused)
            bound = self.context.binding(operand.value, node)
            if bound is None or bound.kind != "assign" or bound.value is None:
                return
            operand = bound.value
            if sum_of_squares(self.context, operand) is not None:
                self.report(node, advice="use torch.linalg.vector_norm")
                return
        terms = plus_terms(operand)
        if len(terms) > 1 and all(
            square_base(self.context, t) is not None or sum_of_squares(self.context, t)
            for t in terms
        ) and not self._never_zero(terms):
            self.report(node, advice="use torch.linalg.vector_norm/torch.hypot or add an epsilon")

    def _never_zero(self, terms: list[cst.BaseExpression]) -> bool:
        """A radicand that cannot be 0: a squared constant among its terms (the pseudo-Huber
        ``sqrt(d ** 2 + c ** 2) - c``), or two terms ``t ** 2 + (k - t) ** 2``."""
        bases = [square_base(self.context, t) for t in terms]
        if any(b is not None and self._constant(b) for b in bases):
            return True
        spelled = [code(_bare(b)) for b in bases if b is not None]
        for base in bases:
            if isinstance(base, cst.BinaryOperation) and isinstance(
                    base.operator, (cst.Subtract, cst.Add)):
                sides = (_bare(base.left), _bare(base.right))
                if any(isinstance(s, (cst.Integer, cst.Float)) and s.value.strip("0.") for s in
                       sides) and any(code(s) in spelled for s in sides):
                    return True
        return False

    def _constant(self, base: cst.BaseExpression) -> bool:
        """A number: a literal, a name bound to one, a parameter with a number default, or
        a configuration attribute (``args.c``, ``self.huber_c``, ``cfg.eps``)."""
        base = _bare(base)
        if isinstance(base, cst.UnaryOperation):
            base = base.expression
        if isinstance(base, (cst.Integer, cst.Float)):
            return bool(base.value.strip("0._"))
        if isinstance(base, cst.Attribute) and isinstance(base.value, cst.Name) and (
                base.value.value in ("args", "cfg", "config", "opt", "opts", "hparams",
                                     "params", "settings")):
            return True
        if isinstance(base, cst.Name):
            bound = self.context.binding(base.value)
            value = bound.value if bound is not None else None
            return isinstance(value, (cst.Integer, cst.Float)) and bool(value.value.strip("0._"))
        return False

    def _never_differentiated(self, node: cst.Call) -> bool:
        """The result goes straight to the host or to a non-differentiable op: ``.item()``,
        ``.numpy()``, ``.tolist()``, ``print``, ``topk``/``argsort``/``argmax``..."""
        ancestors = self.context.ancestors
        for anc in reversed(ancestors[:-1]):
            if isinstance(anc, (cst.BaseStatement, cst.BaseSmallStatement)):
                break
            if isinstance(anc, cst.Call):
                name = (self.context.qualified_name(anc.func) or "").rsplit(".", 1)[-1] or (
                    anc.func.attr.value if isinstance(anc.func, cst.Attribute) else "")
                if isinstance(anc.func, cst.Attribute):
                    name = anc.func.attr.value
                if name in _HOST_ONLY:
                    return True
        statement = next((a for a in reversed(ancestors) if isinstance(a, cst.Assign)), None)
        if statement is not None and len(statement.targets) == 1 and isinstance(
                statement.targets[0].target, cst.Name):
            return _only_read_on_host(self.context, statement.targets[0].target.value)
        return False

    def _sqrt_operand(self, node: cst.Call) -> cst.BaseExpression | None:
        func = node.func
        qual = self.context.qualified_name(func)
        if qual == "torch.sqrt":
            if len(node.args) == 1 and not node.args[0].star and (
                node.args[0].keyword is None or node.args[0].keyword.value == "input"
            ):
                return node.args[0].value
            return None
        if qual is None and isinstance(func, cst.Attribute) and func.attr.value == "sqrt" \
                and not node.args:
            return func.value
        return None

    def _fix(self, node: cst.Call, base: cst.BaseExpression, args: list[cst.Arg]) -> Fix | None:
        values: dict[str, cst.BaseExpression] = {}
        extra: list[str] = []
        for index, arg in enumerate(args):
            if arg.star:
                return None
            if arg.keyword is None:
                if index >= len(_REDUCTION_KEYWORDS) or any(a.keyword for a in args[:index]):
                    return None
                values[_REDUCTION_KEYWORDS[index]] = arg.value
            elif arg.keyword.value in _REDUCTION_KEYWORDS:
                values[arg.keyword.value] = arg.value
            elif arg.keyword.value == "dtype":
                extra.append(f"dtype={self.context.code(arg.value)}")
            else:
                return None
        func = node.func
        if isinstance(func, cst.Attribute) and self.context.qualified_name(func.value) == "torch":
            function, need = f"{self.context.code(func.value)}.linalg.vector_norm", None  # torch.sqrt's spelling
        else:
            spelled = reference(self.context, "torch.linalg.vector_norm")
            if spelled is None:
                return None
            function, need = spelled
        if base.lpar and not isinstance(base, (cst.Tuple, cst.GeneratorExp)):
            base = base.with_changes(lpar=[], rpar=[])
        parts = [self.context.code(base)]
        parts += [f"{key}={self.context.code(values[key])}" for key in _REDUCTION_KEYWORDS if key in values]
        parts += extra
        text = f"{function}({', '.join(parts)})"
        if node.lpar:
            text = "(" * len(node.lpar) + text + ")" * len(node.rpar)
        cleanup: tuple[NodeEdit, ...] = ()
        if isinstance(func, cst.Name):  # `from torch import sqrt`: drop it once unused
            cleanup = import_cleanup(index_for(self.context), func.value,
                                     self._fixable, func)
        return Fix.unsafe(NodeEdit(node, text), *cleanup, imports=(need,) if need else ())

    def _fixable(self, call: cst.Call) -> bool:
        operand = self._sqrt_operand(call)
        return operand is not None and sum_of_squares(self.context, operand) is not None


# results read on the host or used only through a non-differentiable op
_HOST_ONLY = frozenset({"item", "numpy", "tolist", "print", "topk", "argsort", "argmax",
                        "argmin", "sort", "kthvalue", "searchsorted", "bincount", "histc",
                        "nonzero", "format"})


def _bare(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.with_changes(lpar=[], rpar=[]) if getattr(node, "lpar", None) else node


def _only_read_on_host(ctx: FileContext, name: str) -> bool:
    """Every use of ``name`` in the function is the receiver of ``.item()``/``.numpy()``...
    or an argument of ``print``/``topk``... (and there is at least one)."""
    function = ctx.current_function
    scope: cst.CSTNode = function if function is not None else ctx.module
    parents: dict[int, cst.CSTNode] = {}
    uses: list[cst.Name] = []
    for node in iter_nodes(scope):
        for child in semantic_children(node):
            parents[id(child)] = node
        if isinstance(node, cst.Name) and node.value == name:
            uses.append(node)
    read = 0
    for use in uses:
        parent = parents.get(id(use))
        if isinstance(parent, cst.AssignTarget) or isinstance(parent, cst.Attribute) and (
                parent.attr is use):
            continue  # the binding itself, or an attribute named like it
        if isinstance(parent, cst.Attribute) and parent.value is use:
            call = parents.get(id(parent))
            if isinstance(call, cst.Call) and call.func is parent and (
                    parent.attr.value in _HOST_ONLY):
                read += 1
                continue
            return False
        if isinstance(parent, cst.Arg):
            call = parents.get(id(parent))
            func = call.func if isinstance(call, cst.Call) else None
            called = func.attr.value if isinstance(func, cst.Attribute) else (
                func.value if isinstance(func, cst.Name) else None)
            if called in _HOST_ONLY:
                read += 1
                continue
        return False
    return read > 0
