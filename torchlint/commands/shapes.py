"""``torchlint shapes FILE[:CLASS]``: the size chains the analysis inferred for each module
class of a file, layer by layer (in -> out), with where each chain stopped and why."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from torchlint.commands.report import EXIT_CLEAN, EXIT_ERROR, error

if TYPE_CHECKING:  # imported when the command runs: the CLI starts without libcst
    import libcst as cst

    from torchlint.analysis.sizes import Chain, Step

_KIND_CODE = {"size": "TL510", "flatten": "TL511", "rank": "TL512"}


def split_target(target: str) -> tuple[str, str | None]:
    """``path.py:Net`` -> (``path.py``, ``Net``); a path that exists as given is a path."""
    if os.path.exists(target) or ":" not in target:
        return target, None
    path, _, name = target.rpartition(":")
    return (path, name) if name.isidentifier() else (target, None)


def chains_of(path: str, text: str) -> tuple[list[Chain], dict[int, int]]:
    """The chains of ``text`` and the line of every node a step or finding refers to."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    from torchlint.analysis.context import FileContext
    from torchlint.analysis.project import Project
    from torchlint.analysis.sizes import size_facts
    from torchlint.engine.parse import parse

    wrapper = MetadataWrapper(parse(text), unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    # the project's other files: where its classes are built, the constants they define
    context = FileContext(path, wrapper.module, project=Project())
    facts = size_facts(context)
    lines = {id(node): where.start.line for node, where in positions.items()}
    return facts.chains, lines


def render(chains: list[Chain], lines: dict[int, int], only: str | None) -> list[str]:
    out: list[str] = []
    owner = None
    for chain in chains:
        if only is not None and chain.owner != only:
            continue
        if chain.owner != owner:
            owner = chain.owner
            out.append("module level" if owner == "<module>" else f"class {owner}")
        line = lines.get(id(chain.node), 0)
        count = len(chain.mismatches)
        checks = f"{chain.checks} check" + ("s" if chain.checks != 1 else "")
        verdict = (f"{count} mismatch" + ("es" if count > 1 else "") if count
                   else f"consistent ({checks})" if chain.checks else "nothing provable")
        out.append(f"  {chain.name} (line {line}): {verdict}")
        for step in chain.steps:
            out.append("    " + _step(step, chain, lines))
    return out


def _step(step: Step, chain: Chain, lines: dict[int, int]) -> str:
    line = lines.get(id(step.node), 0)
    text = f"{line:>5}  {step.label:<28} {step.before} -> {step.after}"
    if step.stop:
        text += f"   [stopped: {step.stop}]"
    for mismatch in chain.mismatches:
        if _within(mismatch.node, step.node):
            text += f"\n           {_KIND_CODE[mismatch.kind]} {mismatch.message}"
    return text


def _within(node: cst.CSTNode, call: cst.CSTNode) -> bool:
    import libcst as cst

    if node is call:
        return True
    return isinstance(call, cst.Call) and any(arg.value is node for arg in call.args)


@click.command("shapes")
@click.argument("target", metavar="FILE[:CLASS]")
def shapes(target: str) -> None:
    """Print the size chains inferred for each module class of FILE (or of CLASS only):
    each layer with the sizes going in and out, and where a chain stopped and why."""
    import libcst as cst

    from torchlint.source import DecodeError, SourceFile

    path, only = split_target(target)
    try:
        source = SourceFile.read(path)
    except (OSError, DecodeError) as exc:
        error(f"cannot read {path}: {exc}")
        sys.exit(EXIT_ERROR)
    try:
        chains, lines = chains_of(path, source.text)
    except (cst.ParserSyntaxError, SyntaxError, RecursionError) as exc:
        error(f"cannot parse {path}: {exc}")
        sys.exit(EXIT_ERROR)
    out = render(chains, lines, only)
    if not out:
        what = f"class {only}" if only else path
        click.echo(f"No size chain found in {what}.")
    else:
        click.echo("\n".join(out))
    sys.exit(EXIT_CLEAN)
