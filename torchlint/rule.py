"""The base class of every rule."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Literal

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.torch_releases import EVERY_RELEASE, Releases
from torchlint.diagnostic import Fix
from torchlint.engine.triage import Trigger

FixSafety = Literal["safe", "unsafe", "sometimes", "none"]
# abbreviations whose period ends no sentence ("e.g.", "i.e.", "etc.", "vs.", "cf.")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|resp)|\.\.)\.$", re.I)
DOC_SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "Use instead:",
                "## Fix safety")


@dataclass
class Report:
    node: cst.CSTNode
    message: str
    fix: Fix | None
    # the top-level statement being walked when the report was made: most likely the one
    # holding ``node``, which lets positions be computed from that statement alone
    statement: cst.CSTNode | None = None
    # a shape of a default rule that has not earned the default tier (one-off setup code,
    # say): reported only when preview is on, and counted for the summary's hint otherwise
    preview: bool = False


class Rule(cst.BatchableCSTVisitor):
    """A rule looks at nodes and calls :meth:`report`. It never filters, formats or writes.

    Class attributes every rule sets:
      ``code``     the public code, e.g. ``TL301``
      ``name``     kebab-case name, e.g. ``create-then-move``
      ``message``  a ``str.format`` template filled by :meth:`report`'s keyword arguments
      ``default``  on unless deselected (False: opt-in)
      ``preview``  not yet stable: runs only in preview mode (``--preview``), see the README
      ``fix_safety`` for the rule table: safe, unsafe, sometimes (safe or unsafe by case), none
      ``fix_title`` what the fix does, in a few words, for an editor's quick fix
                   ("Use nn.ModuleList"); None: a generic title
      ``triggers`` substrings, one of which any file the rule can flag must contain
      ``patterns`` regular expressions that must all match such a file (optional)
      ``requires`` a :class:`~torchlint.engine.triage.Trigger` over the file's ``ast`` facts
                   that holds on such a file (optional)
      ``applies_to`` the torch releases it has something to say about (default: every one)
    """

    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    default: ClassVar[bool] = True
    # A rule (or a new behaviour of one) that has not yet earned its place: measured below
    # the precision bar on real code. It runs only when the settings turn preview on.
    preview: ClassVar[bool] = False
    fix_safety: ClassVar[FixSafety] = "none"
    fix_title: ClassVar[str | None] = None
    # Substrings of which at least one must occur in a file for the rule to be able to fire
    # (e.g. "DataParallel": even an aliased import spells the name). Empty: always runs.
    # Files where no enabled rule can fire skip the CST parse and walk altogether.
    triggers: ClassVar[tuple[str, ...]] = ()
    # Regular expressions (multiline) that must all match somewhere in a file the rule can
    # flag; searched only when a trigger matched. Tighter than triggers and still far
    # cheaper than a parse: a file no rule can fire on is never parsed by libcst.
    patterns: ClassVar[tuple[str, ...]] = ()
    # A condition over the facts of the file's `ast` (torchlint.engine.triage) that holds on
    # every file the rule can flag: the rule runs only where it holds, and a file where no
    # enabled rule's holds is never parsed by libcst. None: decided by the text alone.
    requires: ClassVar[Trigger | None] = None
    # The torch releases the rule applies to (see torchlint.analysis.torch_releases): it does
    # not run for code that targets another one, and its documentation says which they are.
    applies_to: ClassVar[Releases] = EVERY_RELEASE

    def __init__(self, context: FileContext) -> None:
        super().__init__()
        self.context = context
        self.reports: list[Report] = []

    def report(self, node: cst.CSTNode, *, fix: Fix | None = None, message: str | None = None,
               preview: bool = False, **values: object) -> None:
        """Report ``node``. ``preview=True``: this shape of the rule runs only in preview
        mode (the finding is dropped, and counted as preview-only, when preview is off)."""
        text = message if message is not None else self.message.format(**values)
        ancestors = self.context.ancestors
        statement = ancestors[1] if len(ancestors) > 1 else None
        self.reports.append(Report(node, text, fix, statement, preview))

    # ---------------------------------------------------------------- docs
    @classmethod
    def doc(cls) -> str:
        """The documentation, ending with the torch releases the rule applies to."""
        import inspect

        text = inspect.cleandoc(cls.__doc__ or "")
        return f"{text}\n\n## Torch releases\n{cls.applies_to.describe()}" if text else text

    @classmethod
    def summary(cls) -> str:
        """First sentence of the 'What it does' section: up to the first period that ends a
        sentence (not one of an abbreviation such as "e.g.", nor one inside backticks or
        parentheses)."""
        doc = cls.doc()
        body = " ".join(doc.split("## What it does", 1)[-1].split("##", 1)[0].split())
        for end in re.finditer(r"\.(?=\s)", body):
            before = body[:end.end()]
            if (_ABBREVIATION.search(before) is None and before.count("`") % 2 == 0
                    and before.count("(") == before.count(")")):
                return before
        return body

    @classmethod
    def doc_example(cls, heading: str) -> str:
        """The code block after ``## Example`` or ``Use instead:``."""
        doc = cls.doc()
        part = doc.split(heading, 1)[1]
        match = re.search(r"```python\n(.*?)```", part, re.S)
        return match.group(1) if match else ""
