"""Read torchvision's legacy ``pretrained=`` handling from an installed torchvision, and
write it out as the data module ``torchlint/analysis/torchvision_weights.py``.

torchlint never imports torchvision; this helper does, to produce and to check that table:

    python tests/torchvision_facts.py > torchlint/analysis/torchvision_weights.py

(with a Python that has torchvision installed). ``tests/test_rules_api_ext.py`` compares
the committed module with what the installed torchvision says, and
``tests/test_fix_execution_api_ext.py`` runs TL719's fixes through torchvision's own legacy
shim with :func:`stubbed_builders`, which swaps the model each builder would build for a
recorder: nothing is downloaded and no model is built. Both run this file with a Python that
has torchvision (:func:`torchvision_python`), so they work from a venv without it.

How a builder handles the legacy arguments: ``handle_legacy_interface(weights=("pretrained",
DEFAULT), weights_backbone=("pretrained_backbone", DEFAULT))`` wraps it; ``pretrained=True``
becomes ``weights=DEFAULT`` (or ``DEFAULT(kwargs)`` when DEFAULT is a function of the other
arguments), ``pretrained=False`` becomes ``weights=None``. The wrapper keeps the decorated
builder and that mapping in its closure (cells ``builder`` and ``weights``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import json
import pkgutil
import sys
import warnings
from collections.abc import Iterator
from typing import Any

PUBLIC = (
    "torchvision.models",
    "torchvision.models.detection",
    "torchvision.models.segmentation",
    "torchvision.models.video",
    "torchvision.models.optical_flow",
    "torchvision.models.quantization",
)
# The legacy mapping of these arguments is a function of another argument.
_BY_ARGUMENT_CONSTANTS = ("quantize", "backbone_name", "legacy")


def _model_modules() -> list[Any]:
    import torchvision.models as models

    found = [models]
    for info in pkgutil.walk_packages(models.__path__, "torchvision.models."):
        found.append(importlib.import_module(info.name))
    return found


def _legacy_wrapper(function: Any) -> Any | None:
    """The ``handle_legacy_interface`` wrapper inside ``function`` (its closure holds the
    cells ``builder`` and ``weights``), or None."""
    seen: set[int] = set()
    current = function
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        code = getattr(current, "__code__", None)
        if code is not None and current.__closure__:
            cells = dict(zip(code.co_freevars, current.__closure__))
            if "builder" in cells and "weights" in cells:
                return current
        current = getattr(current, "__wrapped__", None)
    return None


def _cells(wrapper: Any) -> dict[str, Any]:
    return dict(zip(wrapper.__code__.co_freevars, wrapper.__closure__))


def _member(value: Any) -> tuple[str, str] | None:
    from torchvision.models._api import WeightsEnum

    if isinstance(value, WeightsEnum):
        return type(value).__name__, value._name_
    return None


@functools.lru_cache(maxsize=1)
def builders() -> dict[Any, list[str]]:
    """Every function with the legacy interface -> every ``module.name`` path reaching it."""
    paths: dict[Any, list[str]] = {}
    for module in _model_modules():
        for attr, value in vars(module).items():
            if attr.startswith("_") or not inspect.isfunction(value):
                continue
            if _legacy_wrapper(value) is not None:
                paths.setdefault(value, []).append(f"{module.__name__}.{attr}")
    return paths


def _canonical(paths: list[str]) -> str:
    public = [p for p in paths if p.rpartition(".")[0] in PUBLIC]
    return min(public or paths, key=lambda p: (len(p), p))


def _lambda_argument(default: Any) -> str:
    constants = [c for c in default.__code__.co_consts if isinstance(c, str)]
    found = [c for c in _BY_ARGUMENT_CONSTANTS if c in constants]
    if len(found) != 1:
        raise RuntimeError(f"unknown shape of a legacy mapping: {constants}")
    return "pretrained" if found[0] == "legacy" else found[0]


def _by_argument(default: Any, argument: str, short_names: list[str]
                 ) -> dict[object, tuple[str, str]]:
    """What a lambda mapping gives for each value of the argument it reads."""
    if argument == "quantize":
        values: list[object] = [False, True]
    elif argument == "pretrained":
        values = [True, "legacy"]
    else:
        values = list(short_names)
    found: dict[object, tuple[str, str]] = {}
    for value in values:
        kwargs = {"pretrained": True, argument: value}
        try:
            member = _member(default(kwargs))
        except Exception:  # a name that is not a builder of the lambda's module
            continue
        if member is not None:
            found[value] = member
    return found


def _enum_modules(enum: type, modules: dict[str, Any]) -> list[str]:
    """Modules from which the enum can be imported: its public namespaces, then the module
    that defines it."""
    homes = [name for name in PUBLIC if getattr(modules[name], enum.__name__, None) is enum]
    if enum.__module__ not in homes:
        homes.append(enum.__module__)
    return homes


def _shadowed(modules: dict[str, Any]) -> list[str]:
    """Modules whose name in their package is taken by a function: ``torchvision.models.alexnet``
    is the builder function, so ``torchvision.models.alexnet.X`` fails although
    ``from torchvision.models.alexnet import X`` works."""
    found = []
    for name, module in modules.items():
        package, _, leaf = name.rpartition(".")
        if package in modules and getattr(modules[package], leaf, module) is not module:
            found.append(name)
    return sorted(found)


def read_table() -> dict[str, Any]:
    """The facts of the installed torchvision, as the data module holds them."""
    import torchvision
    from torchvision.models._api import WeightsEnum

    modules = {m.__name__: m for m in _model_modules()}
    found = builders()
    short_names = sorted({p.rpartition(".")[2] for paths in found.values() for p in paths})
    pretrained: dict[str, tuple[str | None, str | None]] = {}
    backbone: dict[str, tuple[str, str]] = {}
    by_argument: dict[str, tuple[str, dict[object, tuple[str, str]]]] = {}
    aliases: dict[str, str] = {}
    enums: dict[str, list[str]] = {}
    for function, paths in found.items():
        key = _canonical(paths)
        for path in paths:
            if path != key:
                aliases[path] = key
        mapping = _cells(_legacy_wrapper(function))["weights"].cell_contents
        for weights_param, (legacy_param, default) in mapping.items():
            if (weights_param, legacy_param) not in (("weights", "pretrained"),
                                                     ("weights_backbone", "pretrained_backbone")):
                raise RuntimeError(f"{key}: unknown legacy parameter {legacy_param}")
            member = _member(default)
            if member is not None:
                enums.setdefault(member[0], _enum_modules(type(default), modules))
            if legacy_param == "pretrained_backbone":
                if member is None:
                    raise RuntimeError(f"{key}: pretrained_backbone maps to {default!r}")
                backbone[key] = member
                continue
            if member is not None:
                pretrained[key] = member
                continue
            enum = _weights_enum(function)
            if enum is not None:
                enums.setdefault(enum.__name__, _enum_modules(enum, modules))
            if default is None:  # pretrained=True raises: no weights for this model
                pretrained[key] = (enum.__name__ if enum else None, None)
                continue
            argument = _lambda_argument(default)
            values = _by_argument(default, argument, short_names)
            for value, (enum_name, _) in values.items():
                enum_type = type(default({"pretrained": True, argument: value}))
                enums.setdefault(enum_name, _enum_modules(enum_type, modules))
            by_argument[key] = (argument, values)
            # a literal True alone decides a mapping that reads only `pretrained`
            decided = values.get(True) if argument == "pretrained" else None
            pretrained[key] = decided or (enum.__name__ if enum else None, None)
    assert all(issubclass(getattr(modules[homes[0]], name), WeightsEnum)
               for name, homes in enums.items())
    return {
        "version": torchvision.__version__.split("+")[0],
        "pretrained": dict(sorted(pretrained.items())),
        "backbone": dict(sorted(backbone.items())),
        "by_argument": dict(sorted(by_argument.items())),
        "aliases": dict(sorted(aliases.items())),
        "enum_modules": {k: tuple(v) for k, v in sorted(enums.items())},
        "shadowed": tuple(_shadowed(modules)),
    }


def _weights_enum(function: Any) -> type | None:
    """The weights enum of a builder (None for the backbone helpers, which take any)."""
    from torchvision.models import get_model_weights
    from torchvision.models._api import WeightsEnum

    try:
        enum = get_model_weights(function)
    except Exception:
        return None
    return None if enum is WeightsEnum else enum  # type: ignore[no-any-return]


@contextlib.contextmanager
def stubbed_builders() -> Iterator[None]:
    """Every legacy-interface builder returns ``("built", kwargs)``: the arguments torchvision's
    legacy shim hands to the real builder, which is not run (nothing is downloaded)."""
    swapped = []
    for function in builders():
        cell = _cells(_legacy_wrapper(function))["builder"]
        swapped.append((cell, cell.cell_contents))

        def record(*args: Any, **kwargs: Any) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
            return ("built", args, kwargs)

        cell.cell_contents = record
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for cell, original in swapped:
            cell.cell_contents = original


# ------------------------------------------------------------------ the data module
_HEADER = '''"""torchvision's model builders and the weights their legacy ``pretrained=`` argument picks
(TL719), with the torchvision release facts TL719 and TL720 need. Pure data; torchlint never
imports torchvision.

Generated from torchvision {version} by ``python tests/torchvision_facts.py``; the tests
compare it with an installed torchvision (``tests/test_rules_api_ext.py``) and run the fixes
through torchvision's own legacy shim (``tests/test_fix_execution_api_ext.py``).

``handle_legacy_interface`` turns ``pretrained=True`` into ``weights=<the member below>`` and
``pretrained=False`` into ``weights=None`` (``pretrained_backbone`` -> ``weights_backbone``
likewise). The member is the one the shim picks, not ``DEFAULT``, which for many models
names newer weights with other accuracy.
"""

from __future__ import annotations

# the torchvision release this table was read from
TORCHVISION_VERSION = "{version}"

# torchvision 0.13 deprecated ``pretrained=``/``pretrained_backbone=`` (``weights=`` enums
# arrived in the same release); it still accepts and warns in {version}
PRETRAINED_DEPRECATED_IN = (0, 13)
# ``transforms.v2`` arrived in 0.15 with ``v2.ToTensor`` already deprecated (it warns);
# its replacement ``v2.ToImage()`` + ``v2.ToDtype(torch.float32, scale=True)`` needs 0.16
V2_INTRODUCED_IN = (0, 15)
V2_TOIMAGE_SINCE = (0, 16)
# the torch release each torchvision release above was built for (a torch target implies
# at most this torchvision)
TORCH_FOR_TORCHVISION = {{(0, 13): (1, 12), (0, 15): (2, 0), (0, 16): (2, 1)}}
'''


def _literal(value: object) -> str:
    """Python source of a value, strings in double quotes."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        inner = ", ".join(_literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)


def _lines(name: str, comment: str, value: dict[Any, Any] | tuple[str, ...],
           annotation: str) -> str:
    out = [f"# {line}" for line in comment.splitlines()]
    if isinstance(value, tuple):
        out.append(f"{name}: {annotation} = frozenset({{")
        out += [f"    {_literal(item)}," for item in value]
        out.append("})")
        return "\n".join(out) + "\n"
    out.append(f"{name}: {annotation} = {{")
    for key, item in value.items():
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], dict):
            out.append(f"    {_literal(key)}: ({_literal(item[0])}, {{")
            out += [f"        {_literal(k)}: {_literal(v)}," for k, v in item[1].items()]
            out.append("    }),")
        else:
            out.append(f"    {_literal(key)}: {_literal(item)},")
    out.append("}")
    return "\n".join(out) + "\n"


def render(table: dict[str, Any]) -> str:
    parts = [_HEADER.format(version=table["version"])]
    parts.append(_lines(
        "PRETRAINED",
        "builder (canonical path) -> (weights enum, member ``pretrained=True`` picks).\n"
        "Member None: no member for a literal True: the model has no such weights\n"
        "(torchvision raises ValueError), or the member depends on another argument\n"
        "(BY_ARGUMENT).",
        table["pretrained"], "dict[str, tuple[str | None, str | None]]"))
    parts.append(_lines(
        "PRETRAINED_BACKBONE",
        "builder -> (enum, member) that ``pretrained_backbone=True`` passes as weights_backbone",
        table["backbone"], "dict[str, tuple[str, str]]"))
    parts.append(_lines(
        "BY_ARGUMENT",
        "builders whose ``pretrained=True`` member depends on an argument: (that argument,\n"
        "{its value: (enum, member)}): quantization builders read ``quantize=`` (quantized\n"
        "or float weights), the backbone helpers ``backbone_name=``, keypointrcnn accepts\n"
        "``pretrained=\"legacy\"`` for its older weights",
        table["by_argument"],
        "dict[str, tuple[str, dict[object, tuple[str, str]]]]"))
    parts.append(_lines(
        "ALIASES",
        "every other import path of a builder -> its canonical path",
        table["aliases"], "dict[str, str]"))
    parts.append(_lines(
        "ENUM_MODULES",
        "weights enum -> modules it can be imported from (public namespaces first, then the\n"
        "module defining it)",
        table["enum_modules"], "dict[str, tuple[str, ...]]"))
    parts.append(_lines(
        "SHADOWED_MODULES",
        "modules whose name in their package is a builder function: reachable by\n"
        "``from M import X`` but not as an attribute chain (``torchvision.models.alexnet``\n"
        "is the function)",
        table["shadowed"], "frozenset[str]"))
    return "\n\n".join(parts)


# ------------------------------------------------------- run from another Python
# The tests run with torchlint's own Python, which may lack torchvision; they then run this
# file with a Python that has it (``TORCHLINT_TORCHVISION_PYTHON``, else ``/tmp/tv/bin/python``
# when present). It needs only the standard library and torchvision.
OTHER_PYTHONS = ("/tmp/tv/bin/python",)


def torchvision_python() -> str | None:
    """A Python with torchvision: this one, the one named by ``TORCHLINT_TORCHVISION_PYTHON``
    or a known venv; None when there is none."""
    import importlib.util
    import os

    if importlib.util.find_spec("torchvision") is not None:
        return sys.executable
    for candidate in (os.environ.get("TORCHLINT_TORCHVISION_PYTHON"), *OTHER_PYTHONS):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def run_pairs(pairs: list[list[str]]) -> list[str]:
    """Execute each ``(label, before, after)`` program with the builders stubbed; the failures
    (``result`` differs, or the fixed version raises where the original did not)."""
    failures = []
    with stubbed_builders():
        for label, before, after in pairs:
            outcomes = []
            for text in (before, after):
                namespace: dict[str, Any] = {"__name__": "__fix_case__"}
                try:
                    exec(compile(text, "<case>", "exec"), namespace)
                    outcomes.append(("ok", namespace.get("result")))
                except Exception as error:  # compared, not hidden: the two must agree
                    outcomes.append(("raised", type(error).__name__))
            if outcomes[0] != outcomes[1]:
                failures.append(f"{label}\n--- before\n{before}--- after\n{after}"
                                f"--- {outcomes[0]!r}\n!=  {outcomes[1]!r}")
    return failures


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    if sys.argv[1:2] == ["--table"]:  # the facts as a Python literal
        sys.stdout.write(repr(read_table()))
    elif sys.argv[1:2] == ["--run-pairs"]:  # JSON pairs on stdin -> JSON failures
        sys.stdout.write(json.dumps(run_pairs(json.load(sys.stdin))))
    else:
        sys.stdout.write(render(read_table()))
