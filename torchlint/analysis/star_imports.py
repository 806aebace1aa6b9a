"""What a star import (``from x import *``) may bind for the file that holds it.

Such an import binds names spelled nowhere in the file, so no text pattern or ``ast`` fact
can tell what they stand for (the project knowledge follows it into the module, when that
module is a file of the project). A name it binds matters only where the file reads it and
none of the file's own scopes binds it: a package's ``__init__`` that only re-exports its
modules reads no such name.

The scopes come from the standard library's :mod:`symtable`, CPython's own analysis of
which scope binds each name.
"""

from __future__ import annotations

import symtable
from functools import lru_cache

_MODULE_ATTRIBUTES = frozenset({"__name__", "__file__", "__doc__", "__spec__", "__path__",
                                "__package__", "__loader__", "__builtins__", "__dict__",
                                "__annotations__"})


@lru_cache(maxsize=2)
def outside_names(text: str) -> frozenset[str] | None:
    """The names ``text`` reads that none of its scopes binds, module attributes aside:
    those a star import may bind for it (builtins included: a star import may rebind
    ``range``). None when CPython cannot analyse it."""
    try:
        table = symtable.symtable(text, "<source>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    module_bound = {s.get_name() for s in table.get_symbols()
                    if s.is_assigned() or s.is_imported()}
    found: set[str] = set()
    scopes = [table]
    while scopes:
        scope = scopes.pop()
        for symbol in scope.get_symbols():
            # a global a function, class or the module reads, which the module never binds
            if symbol.is_referenced() and symbol.is_global() and (
                    symbol.get_name() not in module_bound):
                found.add(symbol.get_name())
        scopes.extend(scope.get_children())
    return frozenset(found - _MODULE_ATTRIBUTES)
