"""What ``torchlint check`` prints after a run, and its exit status.

Findings (or statistics, or diffs) go to stdout or ``-o``; the summary, the fixes made
(``--show-fixes``) and the hints go to stderr, unless ``-q`` (findings only) or ``-s``
(nothing at all).
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import click

from torchlint.diagnostic import Diagnostic, applicable
from torchlint.reporters import RENDERERS, Sources
from torchlint.run.outcome import CANNOT_FIX, FileOutcome, Mode

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def error(message: str, snippet: str = "") -> None:
    click.echo(f"torchlint: error: {message}", err=True)
    if snippet:
        click.echo(snippet, err=True)


def warning(message: str) -> None:
    click.echo(f"torchlint: warning: {message}", err=True)


def output_error(exc: OSError) -> None:
    """Say that stdout cannot be written, and send what is left in its buffer nowhere (so
    that the exit's flush fails no more)."""
    error(f"cannot write the output: {exc.strerror or exc}")
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until the exit
    except OSError:
        pass


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


@dataclass
class Output:
    """Where and how findings are written, and how much else is said."""

    output_format: str = "concise"
    output_file: Path | None = None
    statistics: bool = False
    quiet: bool = False  # findings only
    silent: bool = False  # nothing
    exit_zero: bool = False
    fix_only: bool = False  # report what was fixed, not what remains
    show_fixes: bool = False
    exit_non_zero_on_fix: bool = False
    sources: Sources = field(default_factory=Sources)


def _write_findings(diagnostics: list[Diagnostic], stream: TextIO, output: Output,
                    mode: Mode) -> None:
    if output.statistics:
        from torchlint.reporters.statistics import render_statistics

        render_statistics(diagnostics, stream, as_json=output.output_format == "json")
    elif output.output_format == "concise":
        from torchlint.reporters.concise import render_concise

        render_concise(diagnostics, stream, output.sources, unsafe=mode.unsafe)
    else:
        RENDERERS[output.output_format](diagnostics, stream, output.sources)


def _write_file(diagnostics: list[Diagnostic], output: Output, mode: Mode) -> bool:
    """Write the findings to ``output.output_file``; False (said) when it cannot be."""
    assert output.output_file is not None
    try:
        parent = output.output_file.parent
        if str(parent) not in ("", "."):
            os.makedirs(parent, exist_ok=True)
        with open(output.output_file, "w", encoding="utf-8", newline="\n") as handle:
            _write_findings(diagnostics, handle, output, mode)
    except OSError as exc:
        error(f"cannot write {output.output_file}: {exc.strerror or exc}")
        return False
    return True


def finish(outcomes: list[FileOutcome], files_checked: int, mode: Mode, output: Output,
           *, from_stdin: bool = False) -> int:
    """Print what the run found and fixed; the exit status."""
    diagnostics = sorted((d for o in outcomes for d in o.diagnostics), key=lambda d: d.sort_key)
    errors = [o for o in outcomes if o.error]
    fixed = sum(o.fixed for o in outcomes)
    diffs = [o.diff for o in outcomes if o.diff]
    # with stdin --fix, the fixed code owns stdout; findings go to stderr
    stream: TextIO = sys.stderr if (from_stdin and mode.fix) else sys.stdout
    try:
        if output.silent or (output.fix_only and not mode.diff):
            pass
        elif mode.diff:
            for diff in diffs:
                sys.stdout.write(diff)
        elif output.output_file is not None:
            if not _write_file(diagnostics, output, mode):
                return EXIT_ERROR
        else:
            _write_findings(diagnostics, stream, output, mode)
        stream.flush()
        sys.stdout.flush()
    except BrokenPipeError:  # `torchlint check | head`: the CLI's own exit
        raise
    except OSError as exc:  # a full disk, a closed or broken stdout
        output_error(exc)
        return EXIT_ERROR
    if not output.silent:
        for outcome in outcomes:
            if outcome.warning:
                warning(f"{outcome.path}: {outcome.warning}")
        for outcome in errors:
            error(f"{outcome.path}: {outcome.error}")
        if output.show_fixes and fixed:
            _show_fixes(outcomes)
        if not output.quiet:
            for line in summary(outcomes, diagnostics, mode, files_checked, output):
                click.echo(line, err=True)
    if errors:
        return EXIT_ERROR
    if output.exit_zero:
        return EXIT_CLEAN
    if mode.diff:  # as Ruff: 1 when there is something to change, else 0
        return EXIT_FINDINGS if diffs else EXIT_CLEAN
    if output.exit_non_zero_on_fix and fixed:
        return EXIT_FINDINGS
    if output.fix_only:
        return EXIT_CLEAN
    return EXIT_FINDINGS if diagnostics else EXIT_CLEAN


def _show_fixes(outcomes: list[FileOutcome]) -> None:
    from torchlint.registry import rule_catalog

    catalog = rule_catalog()
    fixed = [o for o in outcomes if o.fixed_codes]
    total = sum(count for o in fixed for _, count in o.fixed_codes)
    click.echo(f"Fixed {plural(total, 'error')}:", err=True)
    for outcome in sorted(fixed, key=lambda o: o.path):
        click.echo(f"- {outcome.path}:", err=True)
        for code, count in outcome.fixed_codes:
            name = catalog[code].name if code in catalog else ""
            click.echo(f"    {count} × {code} ({name})" if name else f"    {count} × {code}",
                       err=True)


def summary(outcomes: list[FileOutcome], diagnostics: list[Diagnostic], mode: Mode,
            files_checked: int, output: Output) -> list[str]:
    """The summary lines (stderr)."""
    fixed = sum(o.fixed for o in outcomes)
    safe = sum(1 for d in diagnostics if d.fix is not None and d.fix.is_safe)
    unsafe = sum(1 for d in diagnostics if d.fix is not None and not d.fix.is_safe)
    lines: list[str] = []
    if mode.diff:
        would = sum(sum(n for _, n in o.fixed_codes) if o.fixed_codes else
                    sum(1 for d in o.diagnostics if applicable(d, mode.unsafe))
                    for o in outcomes if o.diff)
        lines.append(f"Would fix {plural(would, 'error')}" + (
            f" ({unsafe} more with --unsafe-fixes)." if unsafe and not mode.unsafe else "."))
        return lines
    if output.fix_only:
        lines.append(f"Fixed {plural(fixed, 'error')}." if fixed else "No errors fixed.")
        if diagnostics:
            lines.append(f"{plural(len(diagnostics), 'error')} remaining: run without "
                         "--fix-only to see them.")
        return lines
    errors = sum(1 for o in outcomes if o.error)
    unwritten = sum(o.unwritten for o in outcomes)
    if not diagnostics and not fixed and errors:
        lines.append(f"No findings, but {plural(errors, 'file')} could not be fully checked "
                     "(see the errors above).")
    elif not diagnostics and not fixed:
        skipped = sum(1 for o in outcomes if o.warning)  # over max-file-size: not checked
        lines.append(f"All checks passed! ({plural(files_checked - skipped, 'file')} checked"
                     + (f", {skipped} skipped)" if skipped else ")"))
    elif mode.fix:
        line = _fix_tally(outcomes, fixed, len(diagnostics))
        if not fixed and not unwritten and line.endswith(" remaining).") and not any(
                applicable(d, mode.unsafe) for d in diagnostics):
            line = line[:-1] + (": none of them has a fix." if mode.unsafe else
                                ": none of them has a safe fix.")
        lines.append(line)
    else:
        lines.append(f"Found {plural(len(diagnostics), 'error')}.")
    if unwritten:
        lines.append(_unwritten(outcomes, unwritten))
    if diagnostics:
        fixable_now = safe + (unsafe if mode.unsafe else 0)
        if mode.fix:  # the fixes of a file that could not be written are not for --fix
            fixable_now -= sum(1 for o in outcomes if o.unwritten for d in o.diagnostics
                               if applicable(d, mode.unsafe))
        if fixable_now:
            lines.append(f"[*] {fixable_now} fixable with the `--fix` option"
                         + (" (with `--unsafe-fixes`)." if mode.unsafe and unsafe else "."))
        if unsafe and not mode.unsafe:
            more = f"{unsafe} more fix" + ("" if unsafe == 1 else "es")
            lines.append(f"{more} available with `--fix --unsafe-fixes`"
                         " (review them first with `--diff --unsafe-fixes`).")
    preview_only = sum(o.preview_only for o in outcomes)
    if preview_only:  # counted only while preview is off
        lines.append(f"{preview_only} more finding{'' if preview_only == 1 else 's'} with "
                     "--preview (rules and shapes not yet in the default tier).")
    if diagnostics:
        if output.statistics and output.output_format == "concise":
            from torchlint.reporters.statistics import LEGEND

            lines.append(LEGEND)
        elif output.output_format == "concise" and not output.statistics:
            code = Counter(d.code for d in diagnostics).most_common(1)[0][0]
            lines.append(f"Run `torchlint explain {code}` (or any code) to learn why a rule "
                         "matters; `--output-format full` shows each finding in its code "
                         "with its fix.")
    return lines


def _unwritten(outcomes: list[FileOutcome], count: int) -> str:
    """Which files kept the fixes made for them unwritten, and why."""
    files = [o for o in outcomes if o.unwritten]
    named = ", ".join(f"{o.path} ({(o.error or '').removeprefix(CANNOT_FIX)})"
                      for o in files[:3])
    more = f" and {plural(len(files) - 3, 'more file')}" if len(files) > 3 else ""
    unchanged = "it is" if len(files) == 1 else "they are"
    return (f"{count} fix{'' if count == 1 else 'es'} not written: {named}{more}; "
            f"{unchanged} unchanged.")


def _fix_tally(outcomes: list[FileOutcome], fixed: int, remaining: int) -> str:
    """"Found N errors (F fixed, R remaining)", the counts adding up: a fix can uncover a
    finding (fixing one line reveals the next problem on it) or settle one reported
    separately, so the first lint's count may differ from fixed + remaining."""
    first = sum(o.found if o.found is not None else o.fixed + len(o.diagnostics)
                for o in outcomes)
    total = fixed + remaining
    line = f"Found {plural(total, 'error')} ({fixed} fixed, {remaining} remaining)"
    if total > first:
        more = total - first
        return (f"{line}: {first} before fixing, and {more} more that the fixes uncovered "
                "(fixing one finding can reveal another).")
    if total < first:
        gone = first - total
        return (f"Found {plural(first, 'error')} ({fixed} fixed, {remaining} remaining, "
                f"{gone} settled by the fix of another).")
    return line + "."
