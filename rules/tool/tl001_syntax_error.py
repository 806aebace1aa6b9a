from __future__ import annotations

from torchlint.codes import SYNTAX_ERROR, SYNTAX_ERROR_NAME
from torchlint.rule import Rule


class SyntaxErrorRule(Rule):
    """## What it does
    Reports a file that cannot be parsed or decoded, at the position of the error.

    ## Why is this bad?
    Nothing in the file can be checked until it parses: every other rule is blind to it.
    torchlint goes on linting the other files and reports this one instead of crashing.

    ## Example
    ```python
    def train(model:
        pass
    ```

    Use instead:
    ```python
    def train(model):
        pass
    ```

    ## Fix safety
    There is no fix: only the author knows what the code meant.
    """

    code = SYNTAX_ERROR
    name = SYNTAX_ERROR_NAME
    message = "cannot parse: {detail}"
