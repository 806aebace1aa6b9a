"""Which classes of a file are torch modules, for the module-definition rules: those the
file context knows (deriving from ``nn.Module``, a configured base, or a module class of
the project), and also subclasses of a ``torch.nn`` layer (``class Layer(nn.Linear)``)."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.torch_facts import is_layer_name


def is_module_class(ctx: FileContext, cls: cst.ClassDef) -> bool:
    if ctx.is_module_class(cls):
        return True
    return ctx.cached(("layer_subclass", id(cls)), lambda: _derives_from_layer(ctx, cls, 0))


def _derives_from_layer(ctx: FileContext, cls: cst.ClassDef, depth: int) -> bool:
    if depth > 8:
        return False
    for base in cls.bases:
        qual = ctx.qualified_name(base.value)
        if qual is not None and is_layer_name(qual):
            return True
        if isinstance(base.value, cst.Name) and qual is None:
            local = local_class(ctx, base.value.value)
            if local is not None and local is not cls and (
                    ctx.is_module_class(local) or _derives_from_layer(ctx, local, depth + 1)):
                return True
    return False


def local_class(ctx: FileContext, name: str) -> cst.ClassDef | None:
    """The class of this file named ``name`` (top level or nested), if any."""
    def find() -> cst.ClassDef | None:
        return next((n for n in ctx.definitions()
                     if isinstance(n, cst.ClassDef) and n.name.value == name), None)

    return ctx.cached(("local_class", name), find)
