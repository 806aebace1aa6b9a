"""``torchlint check``: its options, and one run (find the files, lint or fix them with
the settings of each, report)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from torchlint.codes import ENGINE_CODES
from torchlint.commands.report import (
    EXIT_CLEAN,
    EXIT_ERROR,
    Output,
    error,
    finish,
    plural,
    warning,
)
from torchlint.config.command_line import CommandLine, workspace_for
from torchlint.config.discovery import discover
from torchlint.config.errors import ConfigError
from torchlint.config.settings import Settings
from torchlint.config.workspace import Workspace
from torchlint.reporters import RENDERERS
from torchlint.run.outcome import Mode


def _split(values: Sequence[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


class _Codes(click.ParamType):
    """A comma-separated list of codes; an empty value stays visible as ``[]`` so that
    ``--select ''`` is rejected rather than read as "no rules"."""

    name = "CODES"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None
                ) -> list[str]:
        if isinstance(value, list):
            return value
        return _split([str(value)])


CODES = _Codes()
MACHINE_FORMATS = frozenset(RENDERERS) - {"concise", "full"}


@dataclass
class _Options:
    paths: tuple[str, ...]
    fix: bool
    unsafe_fixes: bool
    diff: bool
    fix_only: bool
    show_fixes: bool
    exit_non_zero_on_fix: bool
    add_noqa: bool
    select: tuple[list[str], ...]
    ignore: tuple[list[str], ...]
    extend_select: tuple[list[str], ...]
    extend_ignore: tuple[list[str], ...]
    fixable: tuple[list[str], ...]
    unfixable: tuple[list[str], ...]
    extend_fixable: tuple[list[str], ...]
    per_file_ignores: tuple[str, ...]
    extend_per_file_ignores: tuple[str, ...]
    exclude: tuple[str, ...]
    extend_exclude: tuple[str, ...]
    respect_gitignore: bool | None
    force_exclude: bool | None
    preview: bool | None
    target_torch: str | None
    ignore_noqa: bool
    output_format: str
    output_file: Path | None
    statistics: bool
    exit_zero: bool
    quiet: bool
    silent: bool
    verbose: bool
    stdin_filename: str | None
    config: tuple[str, ...]
    isolated: bool
    jobs: int | None
    no_cache: bool
    cache_dir: Path | None
    show_settings: bool
    show_files: bool
    watch: bool


def _command_line(o: _Options) -> CommandLine:
    codes = {"select": o.select, "ignore": o.ignore, "extend-select": o.extend_select,
             "extend-ignore": o.extend_ignore, "fixable": o.fixable, "unfixable": o.unfixable,
             "extend-fixable": o.extend_fixable}
    return CommandLine(
        config=o.config, isolated=o.isolated,
        codes={k: v for k, v in codes.items() if v},
        globs={"exclude": _globs(o.exclude), "extend-exclude": _globs(o.extend_exclude)},
        per_file_ignores=list(o.per_file_ignores) or None,
        extend_per_file_ignores=list(o.extend_per_file_ignores) or None,
        flags={"preview": o.preview, "force-exclude": o.force_exclude,
               "respect-gitignore": o.respect_gitignore},
        target_torch=o.target_torch, honour_noqa=not o.ignore_noqa)


def _globs(values: tuple[str, ...]) -> list[str] | None:
    """Comma-separated globs; a value with none at all stays as "" (an error later)."""
    if not values:
        return None
    return [glob for value in values for glob in (_split([value]) or [""])]


def _conflicts(o: _Options) -> str | None:
    if o.statistics and o.output_format not in ("concise", "json"):
        return (f"--statistics prints counts as concise text or json, not "
                f"{o.output_format}: use --output-format concise or json")
    if o.add_noqa and (o.fix or o.diff or o.fix_only):
        return "--add-noqa cannot be combined with --fix, --fix-only or --diff"
    if o.watch and (o.stdin_filename or o.paths == ("-",)):
        return "--watch cannot read stdin"
    if o.quiet and o.silent:
        return "-q/--quiet and -s/--silent cannot be combined"
    return None


def check_command(**values: Any) -> None:
    """Lint PATHS (files or directories; '-' reads stdin). Default: the current directory."""
    o = _Options(**values)
    problem = _conflicts(o)
    if problem:
        error(problem)
        sys.exit(EXIT_ERROR)
    if o.diff or o.fix_only:
        o.fix = True
    if o.watch:
        from torchlint.commands.watch import watch

        sys.exit(watch(o.paths or (".",), lambda: _run(o, watching=True)))
    sys.exit(_run(o))


def _stdin_path(o: _Options) -> str | None:
    """The path stdin stands for, when stdin is read; None when it is not."""
    if o.paths == ("-",) or (o.stdin_filename and not o.paths):
        return o.stdin_filename or "-"
    if o.stdin_filename and o.paths:
        if "-" not in o.paths:
            warning(f"--stdin-filename reads the source from stdin; ignoring "
                    f"{', '.join(o.paths)}")
        return o.stdin_filename
    return None


def _run(o: _Options, *, watching: bool = False) -> int:
    started = time.perf_counter()
    paths = o.paths or (".",)
    if "-" in paths and len(paths) > 1 and not o.stdin_filename:
        error("'-' (stdin) cannot be combined with other paths")
        return EXIT_ERROR
    stdin_path = None if watching else _stdin_path(o)
    try:
        workspace = workspace_for(_command_line(o))
        if not o.no_cache:  # ignore decisions and requirements, remembered between runs
            workspace.memo.keep_in(str(o.cache_dir) if o.cache_dir else
                                   workspace.settings_for_folder(os.getcwd(), infer=False)
                                   .cache_location())
        if o.show_settings:
            from torchlint.commands.inspect import show_settings

            target = stdin_path if stdin_path and stdin_path != "-" else paths[0]
            click.echo(show_settings(target, workspace))
            return EXIT_CLEAN
        mode = Mode(fix=o.fix and not o.diff, unsafe=o.unsafe_fixes, diff=o.diff)
        output = Output(output_format=o.output_format, output_file=o.output_file,
                        statistics=o.statistics, quiet=o.quiet, silent=o.silent,
                        exit_zero=o.exit_zero, fix_only=o.fix_only and not o.diff,
                        show_fixes=o.show_fixes, exit_non_zero_on_fix=o.exit_non_zero_on_fix)
        if stdin_path is not None:
            return _check_stdin(stdin_path, workspace, mode, output, o)
        found = discover(list(paths), workspace)
    except ConfigError as exc:
        error(str(exc), exc.snippet)
        return EXIT_ERROR
    if found.missing:
        for missing in found.missing:
            error(f"{missing}: no such file or directory")
        return EXIT_ERROR
    if o.verbose:
        _explain_discovery(found, workspace, time.perf_counter() - started)
    if o.show_files:
        from torchlint.commands.inspect import show_files

        show_files(found.files)
        return EXIT_CLEAN
    _warn_preview(found.files, workspace, o)
    if not found.files:
        if not (o.quiet or o.silent):
            click.echo(f"No Python files found under {', '.join(paths)}.", err=True)
        return EXIT_CLEAN
    try:
        if o.add_noqa:
            status = _add_noqa(found.files, workspace, o)
        else:
            status = _check_files(found.files, found.walked, workspace, mode, output, o,
                                  started)
    except ConfigError as exc:  # a configuration met on the way (a nested one)
        error(str(exc), exc.snippet)
        status = EXIT_ERROR
    workspace.memo.save()  # not after Ctrl-C or SIGTERM: nothing is written after a signal
    return status


def _check_stdin(path: str, workspace: Workspace, mode: Mode, output: Output,
                 o: _Options) -> int:
    from torchlint.commands.stdin import check_stdin

    outcome, text = check_stdin(path, workspace, mode)
    if outcome is None:
        if not (o.quiet or o.silent):
            click.echo(f"{path} is excluded (force-exclude): nothing checked.", err=True)
        return EXIT_CLEAN
    output.sources.overrides[outcome.path] = text
    return finish([outcome], 1, mode, output, from_stdin=True)


def _cache_dirs(workspace: Workspace, o: _Options) -> Any:
    if o.no_cache:
        return None
    if o.cache_dir is not None:
        return o.cache_dir
    return lambda path: workspace.settings_for(path).cache_location()


def _check_files(files: list[str], walked: list[str], workspace: Workspace, mode: Mode,
                 output: Output, o: _Options, started: float) -> int:
    from torchlint.run.progress import ProgressBar
    from torchlint.run.runner import run

    machine = o.output_format in MACHINE_FORMATS and not o.statistics
    show_bar = not (o.quiet or o.silent or machine)
    with ProgressBar(len(files), sys.stderr, enabled=show_bar) as bar:
        outcomes = list(run(files, workspace, mode, jobs=o.jobs, cache_dir=_cache_dirs(workspace, o),
                            progress=bar.advance, answered=bar.skip, walked=walked))
    if o.verbose:
        _explain_run(outcomes, time.perf_counter() - started)
    return finish(outcomes, len(files), mode, output)


def _add_noqa(files: list[str], workspace: Workspace, o: _Options) -> int:
    from torchlint.run.add_noqa import add_noqa

    total = 0
    failed = False
    for path in files:
        added = add_noqa(path, workspace)
        total += added.count
        if added.error:
            failed = True
            error(f"{path}: {added.error}")
    if not o.silent:
        click.echo(f"Added {plural(total, 'noqa directive')}.", err=True)
    return EXIT_ERROR if failed else EXIT_CLEAN


def _warn_preview(files: list[str], workspace: Workspace, o: _Options) -> None:
    if o.silent:
        return
    named: set[str] = set()
    chosen: dict[int, Settings] = {}
    for folder in {os.path.dirname(os.path.abspath(f)) for f in files} or {os.getcwd()}:
        settings = workspace.settings_for_folder(folder, infer=False)
        if id(settings) not in chosen:
            chosen[id(settings)] = settings
            named.update(settings.selected_preview_codes())
    chosen_settings = list(chosen.values())
    empty = next((s for s in chosen_settings if not s.enabled_codes() - ENGINE_CODES), None)
    skipped = empty.skipped_preview_codes() if empty else []
    for code in sorted(named - set(skipped)):
        warning(f"{code} is a preview rule; it runs only with --preview "
                "(or `preview = true` in the configuration)")
    if empty is not None:
        warning(_nothing_enabled(*empty.selection_source(), skipped))


def _nothing_enabled(source: str, verb: str, skipped: list[str]) -> str:
    """The warning for a selection that enables no rule, naming the preview rules it chose."""
    if not skipped:
        return f"no rule is enabled: {source} {verb} none; only syntax errors are reported"
    codes = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
    one = len(skipped) == 1
    return (f"no rule is enabled: {source} {verb} none that runs without --preview; {codes} "
            f"{'is a preview rule' if one else 'are preview rules'}: add --preview (or "
            f"`preview = true` in the configuration) to run {'it' if one else 'them'}")


def _explain_discovery(found: Any, workspace: Workspace, seconds: float) -> None:
    def say(text: str) -> None:
        click.echo(f"[torchlint] {text}", err=True)

    configs: dict[str, set[str]] = {}
    for path in found.files:
        settings = workspace.settings_for(path)
        where = settings.config_file or ("none (--isolated)" if workspace.isolated
                                         else "none (the defaults)")
        configs.setdefault(where, set()).add(os.path.dirname(path) or ".")
    for config, folders in sorted(configs.items()):
        shown = sorted(folders)
        more = f" and {len(shown) - 6} more" if len(shown) > 6 else ""
        say(f"configuration {config} for {plural(len(shown), 'folder')}: "
            f"{', '.join(shown[:6])}{more}")
    for path, why in found.skipped:
        say(f"skipped {path}: {why}")
    say(f"found {plural(len(found.files), 'file')} in {seconds * 1000:.0f} ms")


def _explain_run(outcomes: list[Any], seconds: float) -> None:
    hits = [o for o in outcomes if o.cached]
    linted = [o for o in outcomes if not o.cached]
    for outcome in sorted(linted, key=lambda o: -o.seconds)[:10]:
        click.echo(f"[torchlint] checked {outcome.path} in {outcome.seconds * 1000:.0f} ms",
                   err=True)
    click.echo(f"[torchlint] {len(hits)} answered from the cache, {len(linted)} checked; "
               f"{seconds:.2f} s in all", err=True)


# The options of ``torchlint check`` in the sections ``--help`` shows them under (those of
# the README's tables).
def _option_sections() -> list[tuple[str, list[Any]]]:
    return [
        ("Fixing", [
            click.option("--fix/--no-fix", default=False, help="Apply safe fixes in place."),
            click.option("--unsafe-fixes/--no-unsafe-fixes", default=False,
                         help="Also apply (with --fix) or show (with --diff) unsafe fixes."),
            click.option("--diff", is_flag=True, help="Print a unified diff of what --fix would "
                         "change; write nothing. Exits 1 when there is something to change."),
            click.option("--fix-only", is_flag=True, help="Apply fixes and report only what was "
                         "fixed, not what remains (exit 0 unless --exit-non-zero-on-fix)."),
            click.option("--show-fixes", is_flag=True,
                         help="After --fix, list what was fixed, per file and rule."),
            click.option("--exit-non-zero-on-fix", is_flag=True,
                         help="Exit 1 when a file was changed by --fix, even if nothing remains."),
            click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` to every line with "
                         "a finding (to adopt torchlint on existing code)."),
        ]),
        ("Rules and settings", [
            click.option("--select", type=CODES, multiple=True, help="Rule codes or prefixes to "
                         "enable instead of the defaults (e.g. TL3, ALL)."),
            click.option("--ignore", type=CODES, multiple=True,
                         help="Rule codes or prefixes to disable."),
            click.option("--extend-select", type=CODES, multiple=True,
                         help="Rule codes or prefixes to enable on top of the selection."),
            click.option("--extend-ignore", type=CODES, multiple=True,
                         help="The same as --ignore (flake8's name)."),
            click.option("--fixable", type=CODES, multiple=True,
                         help="Only these codes may be fixed (default: ALL)."),
            click.option("--unfixable", type=CODES, multiple=True,
                         help="These codes are reported but never fixed."),
            click.option("--extend-fixable", type=CODES, multiple=True,
                         help="Codes made fixable on top of --fixable."),
            click.option("--per-file-ignores", multiple=True, metavar="PATTERN:CODES",
                         help="Ignore CODES in files matching PATTERN (replaces the "
                         "configuration's), e.g. 'tests/*:TL401,TL402'."),
            click.option("--extend-per-file-ignores", multiple=True, metavar="PATTERN:CODES",
                         help="Like --per-file-ignores, on top of the configuration's."),
            click.option("--target-torch", metavar="X.Y", default=None, help="The oldest torch "
                         "release the code runs on (default: the configuration's, else inferred "
                         "from the declared torch requirement)."),
            click.option("--preview/--no-preview", default=None, help="Run preview rules and "
                         "behaviours (not yet stable); overrides the configuration's `preview`."),
            click.option("--ignore-noqa", is_flag=True, help="Ignore every # noqa comment."),
            click.option("--config", "config", multiple=True, metavar="FILE|KEY=VALUE",
                         help="Use this configuration file for every file, or override one "
                         "setting (TOML: --config 'target-torch = \"2.4\"'). Repeatable."),
            click.option("--isolated", is_flag=True, help="Read no configuration file at all."),
        ]),
        ("Files", [
            click.option("--exclude", multiple=True, metavar="GLOBS",
                         help="Paths never linted (replaces the configuration's and the "
                         "defaults); comma-separated or repeated."),
            click.option("--extend-exclude", multiple=True, metavar="GLOBS",
                         help="More paths never linted."),
            click.option("--respect-gitignore/--no-respect-gitignore", default=None,
                         help="Skip files ignored by .gitignore, .ignore, .git/info/exclude and "
                         "the global excludes file (default: on)."),
            click.option("--force-exclude/--no-force-exclude", default=None,
                         help="Apply the exclusions also to paths named on the command line "
                         "and to --stdin-filename (as pre-commit and editors need)."),
            click.option("--stdin-filename", type=str, default=None, help="Read the source from "
                         "stdin; this path is reported and its settings apply."),
            click.option("--show-files", is_flag=True,
                         help="Print the files that would be checked; lint nothing."),
            click.option("--show-settings", is_flag=True, help="Print the settings the first path "
                         "gets, and where each came from; lint nothing."),
        ]),
        ("Output and running", [
            click.option("--output-format", type=click.Choice(list(RENDERERS)), default="concise",
                         show_default=True, envvar="TORCHLINT_OUTPUT_FORMAT", show_envvar=True,
                         help="How findings are printed: concise (one line each), full (with "
                         "source, fix diff and hint), json, json-lines, sarif, github (workflow "
                         "commands), gitlab (Code Quality), pylint, junit (JUnit XML), rdjson "
                         "(reviewdog). Colour on a terminal, never with NO_COLOR set, always "
                         "with FORCE_COLOR set."),
            click.option("-o", "--output-file", type=click.Path(dir_okay=False, path_type=Path),
                         default=None, help="Write the findings (or statistics) to this file "
                         "(its folders are created) instead of stdout."),
            click.option("--statistics", is_flag=True, help="Print the number of findings per "
                         "rule and whether they are fixable (concise or json)."),
            click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain."),
            click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary."),
            click.option("-s", "--silent", is_flag=True, help="Print nothing; the exit status "
                         "still says whether findings remain."),
            click.option("-v", "--verbose", is_flag=True, help="Also print the configuration of "
                         "each folder, skipped paths, cache hits and timings (stderr)."),
            click.option("-w", "--watch", is_flag=True, help="Check again whenever a file "
                         "changes (needs the watch extra)."),
            click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
                         help="Worker processes (default: the number of CPUs)."),
            click.option("-n", "--no-cache", is_flag=True, envvar="TORCHLINT_NO_CACHE",
                         show_envvar=True, help="Neither read nor write the result cache."),
            click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
                         default=None, envvar="TORCHLINT_CACHE_DIR", show_envvar=True,
                         help="Where results are cached (default: .torchlint_cache in each "
                         "configuration's folder)."),
        ]),
    ]


# option name -> the --help section it is listed under
_SECTION_OF: dict[str, str] = {}


class _Check(click.Command):
    """``torchlint check``, whose ``--help`` lists the options in sections."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        titles = [title for title, _ in _option_sections()]
        sections: dict[str, list[tuple[str, str]]] = {title: [] for title in titles}
        for param in self.get_params(ctx):
            if isinstance(param, click.Argument):
                continue  # PATHS is in the usage line (some click releases list it too)
            record = param.get_help_record(ctx)
            if record is not None:
                # an option of no section (click's own --help) goes with the last one
                sections[_SECTION_OF.get(param.name or "", titles[-1])].append(record)
        for title, records in sections.items():
            if records:
                with formatter.section(title):
                    formatter.write_dl(records)


def _options(function: Any) -> Any:
    """The argument and options of ``torchlint check``, each remembered with its section."""
    for title, decorators in reversed(_option_sections()):
        for decorator in reversed(decorators):
            before = len(getattr(function, "__click_params__", ()))
            function = decorator(function)
            for param in function.__click_params__[before:]:
                _SECTION_OF[param.name] = title
    return click.argument("paths", nargs=-1, type=click.Path(path_type=str))(function)


check = click.command("check", cls=_Check)(_options(check_command))
