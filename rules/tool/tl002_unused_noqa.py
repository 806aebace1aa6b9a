from __future__ import annotations

from torchlint.codes import UNUSED_NOQA, UNUSED_NOQA_NAME
from torchlint.rule import Rule


class UnusedNoqa(Rule):
    """## What it does
    Flags a `# noqa: TLxxx` comment naming a code that is not reported on its line.

    ## Why is this bad?
    A stale suppression hides the next real finding on that line and misleads readers
    into thinking there is a known problem there. Only codes of rules that ran are
    checked, so a suppression for a rule you have not selected is left alone.

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
    There is no fix; remove the comment (or the stale code in it) by hand.
    """

    code = UNUSED_NOQA
    name = UNUSED_NOQA_NAME
    message = "unused noqa directive: {codes}"
    default = False
