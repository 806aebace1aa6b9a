"""The screen's ``ast`` check of TL903: true on every file the rule can flag, and looking
for the generator the rule reports, assigned where a dataset could copy it.

Imports neither libcst nor a rule (the screen runs before either is loaded).
"""

from __future__ import annotations

import ast

from torchlint.analysis.ast_names import dotted as _dotted
from torchlint.analysis.options import Options
from torchlint.engine.triage import FileFacts

# TL903's generators (training_objects.RANDOM_GENERATORS)
_GENERATORS = frozenset({
    "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator",
    "numpy.random.mtrand.RandomState", "random.Random",
})
# the first release whose workers reseed NumPy's global generator
_NUMPY_RESEEDED = (1, 9)


def may_flag_tl903(facts: FileFacts, options: Options) -> bool:
    """TL903 reports a generator (``np.random.default_rng()``, ``random.Random()``...)
    assigned to ``self.X`` or to a module-level name that a method of the file draws from
    (``self.X.integers(...)``, ``rng.random()``); for a target before torch 1.9, also a
    draw from NumPy's global state."""
    target = options.target_torch
    if target is not None and tuple(target) < _NUMPY_RESEEDED and any(
            q.startswith("numpy.random.") and q not in _GENERATORS for q in facts.calls):
        return True
    assigned: set[str] = set()
    for node in facts.nodes(ast.Assign, ast.AnnAssign):
        targets = node.targets if type(node) is ast.Assign else [node.target]  # type: ignore[attr-defined]
        value = node.value  # type: ignore[attr-defined]
        if len(targets) != 1 or value is None:
            continue
        made = [value]  # the generator, or one of a conditional's or boolean's operands
        if type(value) is ast.IfExp:
            made += [value.body, value.orelse]  # type: ignore[attr-defined]
        elif type(value) is ast.BoolOp:
            made += value.values  # type: ignore[attr-defined]
        if any(type(v) is ast.Call and not _GENERATORS.isdisjoint(
                facts.qualnames_of(v.func)) for v in made):  # type: ignore[attr-defined]
            name = _dotted(targets[0])
            if name is not None:
                assigned.add(name)
    if not assigned:
        return False
    return any(type(call.func) is ast.Attribute  # type: ignore[attr-defined]
               and _dotted(call.func.value) in assigned  # type: ignore[attr-defined]
               for call in facts.nodes(ast.Call))
