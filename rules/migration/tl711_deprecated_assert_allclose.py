from __future__ import annotations

import libcst as cst

from torchlint.analysis.torch_releases import ASSERT_ALLCLOSE, Deprecation, by_name
from torchlint.engine.triage import api
from torchlint.rules.migration.deprecations import (
    DeprecatedCallRule,
    Rewrite,
    as_keyword,
    bind,
    join_args,
    releases,
)

DEPRECATED = by_name(ASSERT_ALLCLOSE)
# assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg="")
PARAMETERS = ("actual", "expected", "rtol", "atol", "equal_nan", "msg")


class DeprecatedAssertAllclose(DeprecatedCallRule):
    """## What it does
    Flags calls of `torch.testing.assert_allclose(...)`.

    ## Why is this bad?
    It has been deprecated since torch 1.12 in favour of `torch.testing.assert_close`, and
    warns on every call. The old function quietly converts its inputs to tensors and ignores
    their dtype, so a test can pass while the code under test returns the wrong type.

    ## Example
    ```python
    import torch

    def test_scale():
        torch.testing.assert_allclose(torch.ones(2) * 2, torch.full((2,), 2.0))
    ```

    Use instead:
    ```python
    import torch

    def test_scale():
        torch.testing.assert_close(torch.ones(2) * 2, torch.full((2,), 2.0))
    ```

    ## Fix safety
    Unsafe: the call becomes `torch.testing.assert_close(...)` keeping `rtol`, `atol` and
    `msg` (passed by keyword) and adding `equal_nan=True`, the old default. `assert_close`
    also checks dtype, device and type, so a test that passed may now fail.
    """

    code = "TL711"
    name = "deprecated-assert-allclose"
    triggers = ("assert_allclose",)
    # the old name is spelled at the call or in its import, and torch is imported
    patterns = (r"\bassert_allclose\b", r"\btorch\b")
    requires = api(*DEPRECATED)
    message = "torch.testing.assert_allclose is deprecated; use torch.testing.assert_close"
    fix_safety = "unsafe"
    fix_title = "Use torch.testing.assert_close"
    apis = DEPRECATED
    applies_to = releases(*DEPRECATED.values(),
                          why="`assert_allclose` warns from that release; the rule does not fire for an older target.")

    def rewrite(self, node: cst.Call, deprecation: Deprecation) -> Rewrite | None:
        args = assert_close_args(node)
        return None if args is None else Rewrite(ASSERT_ALLCLOSE.replacement, args, safe=False)


def assert_close_args(node: cst.Call) -> list[cst.Arg] | None:
    """The arguments of the equivalent ``assert_close`` call: the two inputs positional,
    the rest by keyword, ``equal_nan=True`` unless given."""
    args = bind(node, PARAMETERS)
    if args is None or "actual" not in args or "expected" not in args:
        return None
    if any(args[name].keyword is not None for name in ("actual", "expected")):
        return None
    new = []
    for arg in node.args:
        name = next(key for key, value in args.items() if value is arg)
        new.append(arg if name in ("actual", "expected") or arg.keyword is not None
                   else as_keyword(arg, name))
    added = [] if "equal_nan" in args else [("equal_nan", "True")]
    return join_args(new, node, added)
