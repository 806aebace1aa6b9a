"""The command line: ``torchlint check``, ``torchlint rules``, ``torchlint explain``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import click

from torchlint import __version__
from torchlint.codes import syntax_error_at
from torchlint.config.discovery import discover
from torchlint.config.errors import ConfigError
from torchlint.config.loading import resolve_settings
from torchlint.config.settings import Settings
from torchlint.diagnostic import Diagnostic
from torchlint.registry import all_rules, find_rule, nearest_codes
from torchlint.reporters import RENDERERS, Renderer, Sources
from torchlint.reporters.statistics import render_statistics
from torchlint.run.file import lint_one
from torchlint.run.outcome import FileOutcome, Mode
from torchlint.run.progress import with_progress
from torchlint.run.runner import run
from torchlint.source import DecodeError, SourceFile

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _split_codes(values: Sequence[str]) -> list[str]:
    return [code.strip() for value in values for code in value.split(",") if code.strip()]


class _Codes(click.ParamType):
    name = "CODES"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None
                ) -> list[str]:
        return _split_codes([str(value)])


CODES = _Codes()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="torchlint")
def main() -> None:
    """torchlint: find and fix the PyTorch mistakes that cost days."""


def _error(message: str) -> None:
    click.echo(f"torchlint: error: {message}", err=True)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--fix", is_flag=True, help="Apply safe fixes in place.")
@click.option("--unsafe-fixes", is_flag=True,
              help="Also apply (with --fix) or show (with --diff) unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print a unified diff of what --fix would change; "
              "write nothing.")
@click.option("--select", type=CODES, multiple=True,
              help="Rule codes or prefixes to enable instead of the defaults (e.g. TL3, ALL).")
@click.option("--ignore", type=CODES, multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--extend-select", type=CODES, multiple=True,
              help="Rule codes or prefixes to enable on top of the selection.")
@click.option("--output-format", type=click.Choice(list(RENDERERS)), default="concise",
              show_default=True, envvar="TORCHLINT_OUTPUT_FORMAT",
              help="How findings are printed: concise (one line each), full (with source, "
              "fix diff and hint), json, json-lines, sarif, github (workflow commands), "
              "gitlab (Code Quality), pylint.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, writable=True,
              path_type=Path), default=None,
              help="Write the findings (or statistics) to this file instead of stdout.")
@click.option("--statistics", is_flag=True,
              help="Print the number of findings per rule, and whether they are fixable, "
              "instead of the findings.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--stdin-filename", type=str, default=None,
              help="The path to report (and match config against) when reading '-' (stdin).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes (default: the number of CPUs).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where results are cached (default: .torchlint_cache in the project root).")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False,
              path_type=Path), default=None, help="Use this pyproject.toml.")
@click.option("--preview/--no-preview", default=None,
              help="Run preview rules and behaviours (not yet stable); overrides the "
              "configuration's `preview`.")
def check(paths: tuple[str, ...], fix: bool, unsafe_fixes: bool, diff: bool,
          select: tuple[list[str], ...], ignore: tuple[list[str], ...],
          extend_select: tuple[list[str], ...], output_format: str,
          output_file: Path | None, statistics: bool, exit_zero: bool, quiet: bool,
          stdin_filename: str | None, jobs: int | None, no_cache: bool,
          cache_dir: Path | None, config_path: Path | None, preview: bool | None) -> None:
    """Lint PATHS (files or directories; '-' reads stdin). Default: the current directory."""
    paths = paths or (".",)
    from_stdin = paths == ("-",)
    if "-" in paths and not from_stdin:
        _error("'-' (stdin) cannot be combined with other paths")
        sys.exit(EXIT_ERROR)
    start = Path(stdin_filename) if from_stdin and stdin_filename else Path(paths[0])
    if from_stdin and not stdin_filename:
        start = Path.cwd()
    try:
        settings = resolve_settings(
            start if start.exists() else Path.cwd(),
            config=config_path,
            select=[c for group in select for c in group] if select else None,
            ignore=[c for group in ignore for c in group],
            extend_select=[c for group in extend_select for c in group],
            preview=preview,
        )
    except ConfigError as exc:
        _error(str(exc))
        sys.exit(EXIT_ERROR)
    for code in settings.selected_preview_codes():
        click.echo(f"torchlint: warning: {code} is a preview rule; it runs only with --preview "
                   "(or `preview = true` in the configuration)", err=True)
    mode = Mode(fix=fix and not diff, unsafe=unsafe_fixes, diff=diff)
    render = RENDERERS[output_format]

    sources = Sources()
    if from_stdin:
        outcome, text = _check_stdin(stdin_filename or "-", settings, mode)
        sources.overrides[outcome.path] = text
        outcomes = [outcome]
        files_checked = 1
    else:
        found = discover(list(paths), settings)
        if found.missing:
            for missing in found.missing:
                _error(f"{missing}: no such file or directory")
            sys.exit(EXIT_ERROR)
        if not found.files:
            if not quiet:
                click.echo(f"No Python files found under {', '.join(paths)}.", err=True)
            sys.exit(EXIT_CLEAN)
        if no_cache:
            cache_location = None
        else:
            cache_location = cache_dir or Path(settings.root) / ".torchlint_cache"
        results = run(found.files, settings, mode, jobs=jobs, cache_dir=cache_location)
        outcomes = list(with_progress(results, len(found.files), sys.stderr))
        files_checked = len(found.files)
    report = Report(render, sources, output_file, statistics, output_format)
    sys.exit(_finish(outcomes, files_checked, settings, mode, report, quiet, exit_zero,
                     from_stdin))


@dataclass(frozen=True)
class Report:
    """Where and how findings are written."""

    render: Renderer
    sources: Sources
    output_file: Path | None = None
    statistics: bool = False
    output_format: str = "concise"


def _check_stdin(path: str, settings: Settings, mode: Mode) -> tuple[FileOutcome, str]:
    """The outcome, and the text its remaining findings refer to."""
    data = sys.stdin.buffer.read()
    if path.endswith(".ipynb"):
        return _check_stdin_notebook(path, data, settings, mode)
    try:
        source = SourceFile.from_bytes(path, data)
    except DecodeError as exc:
        diag = syntax_error_at(path, exc.line, exc.column, str(exc))
        return FileOutcome(path, [diag]), ""
    outcome = lint_one(source, settings.for_file(path), mode)
    text = source.text
    if mode.fix:
        text = outcome.fixed_text if outcome.fixed_text is not None else source.text
        sys.stdout.buffer.write(source.with_text(text).to_bytes())
        sys.stdout.flush()
    return outcome, text


def _check_stdin_notebook(path: str, data: bytes, settings: Settings, mode: Mode
                          ) -> tuple[FileOutcome, str]:
    """A notebook on stdin: linted by cells like a notebook file; with --fix the (fixed)
    notebook goes to stdout."""
    from torchlint.run.notebook import process_notebook

    outcome = process_notebook(path, settings, mode, data=data)
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    if mode.fix:
        if outcome.fixed_text is not None:
            sys.stdout.buffer.write(outcome.fixed_text.encode("utf-8"))
        else:
            sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return outcome, text


def _finish(outcomes: list[FileOutcome], files_checked: int, settings: Settings, mode: Mode,
            report: Report, quiet: bool, exit_zero: bool, from_stdin: bool) -> int:
    diagnostics = sorted((d for o in outcomes for d in o.diagnostics), key=lambda d: d.sort_key)
    errors = [o for o in outcomes if o.error]
    fixed = sum(o.fixed for o in outcomes)
    # with stdin --fix, the fixed code owns stdout; findings go to stderr
    stream: TextIO = sys.stderr if (from_stdin and mode.fix) else sys.stdout
    if mode.diff:
        for outcome in outcomes:
            if outcome.diff:
                sys.stdout.write(outcome.diff)
    elif report.output_file is not None:
        try:
            with open(report.output_file, "w", encoding="utf-8", newline="\n") as handle:
                _write_findings(diagnostics, handle, report)
        except OSError as exc:
            _error(f"cannot write {report.output_file}: {exc.strerror or exc}")
            return EXIT_ERROR
    else:
        _write_findings(diagnostics, stream, report)
    stream.flush()
    for outcome in errors:
        _error(f"{outcome.path}: {outcome.error}")
    if not quiet:
        _summary(diagnostics, fixed, mode, files_checked, len(errors))
    if errors:
        return EXIT_ERROR
    if diagnostics and not exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _write_findings(diagnostics: list[Diagnostic], stream: TextIO, report: Report) -> None:
    if report.statistics:
        render_statistics(diagnostics, stream, as_json=report.output_format in ("json",
                                                                                 "json-lines"))
    else:
        report.render(diagnostics, stream, report.sources)


def _summary(diagnostics: list[Diagnostic], fixed: int, mode: Mode, files_checked: int,
             errors: int = 0) -> None:
    safe = sum(1 for d in diagnostics if d.fix is not None and d.fix.is_safe)
    unsafe = sum(1 for d in diagnostics if d.fix is not None and not d.fix.is_safe)
    lines: list[str] = []
    if mode.diff:
        would = safe + (unsafe if mode.unsafe else 0)
        lines.append(f"Would fix {_plural(would, 'error')}" + (
            f" ({unsafe} more with --unsafe-fixes)." if unsafe and not mode.unsafe else "."))
    elif not diagnostics and not fixed and errors:
        lines.append(f"No findings, but {_plural(errors, 'file')} could not be fully checked "
                     "(see the errors above).")
    elif not diagnostics and not fixed:
        lines.append(f"All checks passed! ({_plural(files_checked, 'file')} checked)")
    elif mode.fix:
        lines.append(f"Found {_plural(len(diagnostics) + fixed, 'error')} "
                     f"({fixed} fixed, {len(diagnostics)} remaining).")
    else:
        lines.append(f"Found {_plural(len(diagnostics), 'error')}.")
    if not mode.diff and diagnostics:
        fixable_now = safe + (unsafe if mode.unsafe else 0)
        if fixable_now:
            lines.append(f"[*] {fixable_now} fixable with the `--fix` option"
                         + (" (with `--unsafe-fixes`)." if mode.unsafe and unsafe else "."))
        if unsafe and not mode.unsafe:
            more = f"{unsafe} more fix" + ("" if unsafe == 1 else "es")
            lines.append(f"{more} available with `--fix --unsafe-fixes`"
                         " (review them first with `--diff --unsafe-fixes`).")
    for line in lines:
        click.echo(line, err=True)


@main.command()
def server() -> None:
    """Run the language server on stdin/stdout (needs the 'lsp' extra)."""
    try:
        from torchlint.lsp import serve
    except ImportError as exc:
        _error(f"the language server needs pygls: pip install 'torchlint[lsp]' ({exc})")
        sys.exit(EXIT_ERROR)
    serve()


# ------------------------------------------------------------------ rules
def _fix_label(rule: type) -> str:
    return {"safe": "safe", "unsafe": "unsafe", "sometimes": "safe/unsafe",
            "none": "-"}[rule.fix_safety]  # type: ignore[attr-defined]


@main.command("rules")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
def rules_command(fmt: str) -> None:
    """List every rule: code, name, default or opt-in, fix safety, summary."""
    rules = all_rules()
    if fmt == "json":
        payload = [
            {"code": code, "name": rule.name, "default": rule.default,
             "preview": rule.preview,
             "fix": rule.fix_safety, "summary": rule.summary()}
            for code, rule in rules.items()
        ]
        click.echo(json.dumps(payload, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    from torchlint.docs import tier as rule_tier

    table = Table(show_lines=False, header_style="bold")
    for column in ("Code", "Name", "Enabled", "Fix", "Summary"):
        table.add_column(column, overflow="fold")
    for code, rule in rules.items():
        table.add_row(code, rule.name, rule_tier(rule),
                      _fix_label(rule), rule.summary())
    Console(width=max(120, _terminal_width())).print(table)


def _terminal_width() -> int:
    try:
        return os.get_terminal_size().columns
    except OSError:
        return 120


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print the documentation of a rule (by code, e.g. TL301, or by name)."""
    rule = find_rule(code)
    if rule is None:
        hint = nearest_codes(code)
        suggestion = f"; did you mean {', '.join(hint)}?" if hint else ""
        _error(f"unknown rule {code!r}{suggestion}")
        sys.exit(EXIT_ERROR)
    default = "on by default" if rule.default else "opt-in (enable with --select " + rule.code + ")"
    if rule.preview:
        default = "preview: runs only with --preview, " + default
    header = f"# {rule.code} {rule.name}\n\n*{default}; fix: {_fix_label(rule)}*\n\n"
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.markdown import Markdown  # only `explain` on a terminal needs it

        Console().print(Markdown(header + rule.doc()))
    else:
        click.echo(header + rule.doc())


def entry_point() -> None:
    """Console entry point: ``main`` with no traceback for anything unexpected."""
    try:
        main()
    except BrokenPipeError:  # `torchlint check | head`
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the exit-time flush
        except OSError:
            pass
        sys.exit(EXIT_FINDINGS)
    except KeyboardInterrupt:
        click.echo("torchlint: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - last line of defence: one line, exit 2
        _error(f"internal error: {exc!r} (please report it)")
        sys.exit(EXIT_ERROR)
