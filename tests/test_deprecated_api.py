"""The deprecated-API table (torchlint/analysis/torch_releases.py): consistent releases, one
record per qualified name, no release written in the rules that read it, and the facts
that can be checked on the installed torch (marked ``torch``)."""

from __future__ import annotations

import ast
import importlib
import warnings
from pathlib import Path

import pytest

from torchlint.analysis import torch_releases as api
from torchlint.analysis.torch_releases import Deprecation
from torchlint.registry import all_rules

RULES = ("TL706", "TL707", "TL708", "TL709", "TL710", "TL711", "TL712", "TL713", "TL714",
         "TL715", "TL716", "TL717", "TL721")
NEWEST_CHECKED = (2, 14)


def _records() -> list[Deprecation]:
    return [value for value in vars(api).values() if isinstance(value, Deprecation)] + list(
        api.FUNCTORCH.values())


def _tables() -> dict[str, dict[str, Deprecation]]:
    return {code: dict(all_rules()[code].apis) for code in RULES}  # type: ignore[attr-defined]


@pytest.mark.parametrize("record", _records(), ids=lambda r: r.api)
def test_releases_are_ordered(record: Deprecation) -> None:
    change = record.change
    releases = [r for r in (change.deprecated, change.replacement_added, record.removed)
                if r is not None]
    assert all((0, 4) <= r <= NEWEST_CHECKED for r in releases)
    if record.removed is not None:
        assert change.deprecated is not None and change.deprecated < record.removed
        # a removed API had a replacement before it went
        assert change.replacement_added is None or change.replacement_added < record.removed
    assert record.names[0] == record.api
    assert change.replacement, "every API of these rules has a replacement"


def test_each_name_belongs_to_one_rule() -> None:
    owners: dict[str, str] = {}
    for code, table in _tables().items():
        for name in table:
            assert name not in owners, f"{name}: {owners.get(name)} and {code}"
            owners[name] = code


def test_every_record_is_read_by_a_rule() -> None:
    read = {id(record) for table in _tables().values() for record in table.values()}
    unread = [record.api for record in _records() if id(record) not in read]
    assert not unread


def test_tables_cover_the_catalogue() -> None:
    tables = _tables()
    assert {"torch.solve", "torch.symeig", "torch.eig", "torch.lstsq",
            "torch.matrix_rank"} <= set(tables["TL706"])
    assert {f"torch.{n}" for n in ("qr", "cholesky", "ger", "chain_matmul", "lu_solve", "lu",
                                   "svd", "triangular_solve")} <= set(tables["TL707"])
    assert {f"functorch.{n}" for n in ("vmap", "grad", "grad_and_value", "jvp", "vjp",
                                       "jacrev", "jacfwd", "hessian", "functionalize",
                                       "make_functional", "make_functional_with_buffers",
                                       "combine_state_for_ensemble")} == set(tables["TL712"])
    assert {"torch.nn.functional.upsample", "torch.nn.functional.upsample_nearest",
            "torch.nn.functional.upsample_bilinear", "torch.nn.UpsamplingNearest2d",
            "torch.nn.UpsamplingBilinear2d"} == set(tables["TL714"])
    amp = set(tables["TL717"])
    assert {"torch.cpu.amp.autocast", "torch.cpu.amp.GradScaler", "torch.cuda.amp.custom_fwd",
            "torch.cuda.amp.custom_bwd"} <= amp
    assert not any(name.endswith(("cuda.amp.autocast", "cuda.amp.GradScaler")) for name in amp)


def _release_tuples(tree: ast.AST) -> list[str]:
    """Two-int tuples that look like a release, outside docstrings."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple) and len(node.elts) == 2 and all(
                isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts):
            major = node.elts[0].value  # type: ignore[attr-defined]
            if major in (0, 1, 2):
                found.append(ast.unparse(node))
    return found


def test_rules_hold_no_release_numbers() -> None:
    folder = Path(api.__file__).resolve().parents[2] / "rules" / "migration"
    modules = [folder / "deprecations.py"] + [
        path for code in RULES for path in folder.glob(f"tl{code[2:]}_*.py")]
    assert len(modules) == len(RULES) + 1
    for path in modules:
        assert _release_tuples(ast.parse(path.read_text(encoding="utf-8"))) == [], path.name


# ----------------------------------------------------------------- against torch


def _resolve(qualname: str) -> object:
    """What ``qualname`` names: an attribute reached from the top package (the function
    ``torch.nn.utils.weight_norm`` shadows its module), else what ``from <module> import
    <name>`` binds (``torch.nn.utils.weight_norm.weight_norm``)."""
    module, _, name = qualname.rpartition(".")
    value: object = importlib.import_module(qualname.split(".")[0])
    for part in qualname.split(".")[1:]:
        value = getattr(value, part, None)
        if value is None:
            break
    if callable(value):
        return value
    return getattr(importlib.import_module(module), name)


def _installed() -> tuple[int, int]:
    torch = pytest.importorskip("torch")
    major, minor = torch.__version__.split(".")[:2]
    return int(major), int(minor)


@pytest.mark.torch
@pytest.mark.parametrize("record", _records(), ids=lambda r: r.api)
def test_every_name_and_replacement_exists_in_the_installed_torch(record: Deprecation) -> None:
    installed = _installed()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in record.names:
            assert callable(_resolve(name)), name
        replacement = record.replacement.split("(", 1)[0]
        if record.change.replacement_added is None or record.change.replacement_added <= installed:
            assert callable(_resolve(replacement)), replacement


@pytest.mark.torch
@pytest.mark.parametrize("record", api.REMOVED_LINALG + (api.QR, api.CHOLESKY),
                         ids=lambda r: r.api)
def test_removed_functions_raise_from_their_removal_on(record: Deprecation) -> None:
    installed = _installed()
    torch = pytest.importorskip("torch")
    function = _resolve(record.api)
    a = torch.eye(3, dtype=torch.float64) * 2
    arguments = (a, a) if record.api in ("torch.solve", "torch.lstsq") else (a,)
    assert record.removed is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if installed >= record.removed:
            with pytest.raises(RuntimeError, match="removed"):
                function(*arguments)  # type: ignore[operator]
        else:
            function(*arguments)  # type: ignore[operator]


@pytest.mark.torch
@pytest.mark.parametrize("call", [
    ("torch.nn.utils.weight_norm", lambda t: (t.nn.Linear(2, 2),)),
    ("torch.testing.assert_allclose", lambda t: (t.ones(2), t.ones(2))),
    ("torch.range", lambda t: (0, 3)),
    # (torch.chain_matmul warns once per process: another test may have used it first)
    ("torch.nn.functional.upsample", lambda t: (t.ones(1, 1, 2, 2), None, 2)),
    ("torch.cpu.amp.GradScaler", lambda t: ()),
], ids=lambda c: c[0] if isinstance(c, tuple) else "")
def test_deprecated_apis_warn_in_the_installed_torch(call: tuple) -> None:
    torch = pytest.importorskip("torch")
    name, arguments = call
    record = next(r for r in _records() if name in r.names)
    assert record.change.deprecated is not None and record.change.deprecated <= _installed()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _resolve(name)(*arguments(torch))  # type: ignore[operator]
    assert any("deprecat" in str(w.message).lower() for w in caught), name
