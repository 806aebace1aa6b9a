from __future__ import annotations

from torchlint.codes import UNUSED_NOQA, UNUSED_NOQA_NAME
from torchlint.rule import Rule


class UnusedNoqa(Rule):
    """## What it does
    Flags a `# noqa` directive that suppresses nothing. That is a torchlint code or prefix
    (`TL301`, `TL6`) not reported on its line although its rule ran, a code that is no
    torchlint code (`TL999`), and the same for the codes of a file-level
    `# torchlint: noqa: TLxxx`. In preview mode it also flags a blanket `# noqa` on a line
    where nothing is reported: off by default because real code keeps blanket `# noqa`
    comments for flake8 and Ruff, which torchlint cannot judge (649 of them on the
    precision corpus).

    ## Why is this bad?
    A stale suppression hides the next real finding on that line and misleads readers
    into thinking there is a known problem there. Only codes of rules that ran are
    checked, so a suppression for a rule you have not selected is left alone, and codes of
    other tools (`E501`, `F401`) are never judged.

    ## Example
    ```python
    import torch

    x = torch.zeros(3, device="cuda")  # noqa: TL301
    ```

    Use instead:
    ```python
    import torch

    x = torch.zeros(3, device="cuda")
    ```

    ## Fix safety
    The fix removes the stale codes, or the whole directive when none is left (the rest of
    the comment stays). Safe for codes that suppressed nothing; unsafe for a blanket
    `# noqa` (another tool, such as flake8, may rely on it) and for an unknown code (a
    plugin that is not installed here may own it).
    """

    code = UNUSED_NOQA
    name = UNUSED_NOQA_NAME
    message = "unused noqa directive: {codes}"
    default = False
    fix_safety = "sometimes"
