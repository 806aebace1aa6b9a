"""The command line: ``torchlint check``, ``rules``, ``explain``, ``clean``, ``server``."""

from __future__ import annotations

import atexit
import errno
import os
import sys

import click

from torchlint import __version__
from torchlint.commands.check import check
from torchlint.commands.report import EXIT_ERROR, EXIT_FINDINGS, error, output_error
from torchlint.run.bytecode import keep_bytecode
from torchlint.run.interrupt import EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated, handle_sigterm

# what writing stdout can fail with: a full disk or quota, an I/O error, a closed stdout
_OUTPUT_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG, errno.EBADF})
from torchlint.commands.shapes import shapes


class _Commands(click.Group):
    """The command group; Ctrl-C and SIGTERM end any command with one line and the
    shell's status for the signal (click would turn them into "Aborted!" and exit 1)."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except Terminated:
            click.echo("torchlint: terminated", err=True)
            ctx.exit(EXIT_TERMINATED)
        except KeyboardInterrupt:
            click.echo("torchlint: interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="torchlint")
def main() -> None:
    """torchlint: find and fix the PyTorch mistakes that cost days."""


main.add_command(check)
main.add_command(shapes)


@main.command()
def server() -> None:
    """Run the language server on stdin/stdout (needs the 'lsp' extra)."""
    try:
        from torchlint.lsp import serve
    except ImportError as exc:
        error(f"the language server needs pygls: pip install 'torchlint[lsp]' ({exc})")
        sys.exit(EXIT_ERROR)
    serve()


@main.command("rules")
@click.option("--format", "fmt", type=click.Choice(["table", "text", "json"]), default=None,
              help="table (the default on a terminal), text (one tab-separated line a rule: "
              "the default when piped) or json.")
def rules_command(fmt: str | None) -> None:
    """List every rule: code, name, default or opt-in, fix safety, summary."""
    from torchlint.commands.rules import list_rules

    list_rules(fmt)


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print the documentation of a rule (a code such as TL301, or a name); a prefix such
    as TL3 lists that family."""
    from torchlint.commands.rules import explain_rule

    sys.exit(explain_rule(code))


@main.command()
def clean() -> None:
    """Delete torchlint's result caches: the configured one and every .torchlint_cache in
    the current folder and below."""
    from torchlint.config.errors import ConfigError
    from torchlint.config.workspace import Workspace
    from torchlint.run.cache import clean as remove

    targets: set[str] = set()
    if os.environ.get("TORCHLINT_CACHE_DIR"):
        targets.add(os.path.abspath(os.environ["TORCHLINT_CACHE_DIR"]))
    try:
        targets.add(os.path.abspath(Workspace().settings_for(".").cache_location()))
    except ConfigError as exc:
        error(str(exc), exc.snippet)
    for folder, subfolders, _ in os.walk("."):
        if ".torchlint_cache" in subfolders:
            targets.add(os.path.abspath(os.path.join(folder, ".torchlint_cache")))
        subfolders[:] = [d for d in subfolders if d not in (".git", "node_modules",
                                                             ".torchlint_cache")]
    removed = [t for t in sorted(targets) if remove(t)]
    for target in removed:
        click.echo(f"Removed {os.path.relpath(target)}", err=True)
    if not removed:
        click.echo("No torchlint cache to remove.", err=True)


def entry_point() -> None:
    """Console entry point: ``main`` with no traceback for anything unexpected."""
    handle_sigterm()
    # once the run is over: its modules' bytecode, for the next run (see run/bytecode.py)
    atexit.register(keep_bytecode)
    try:
        main()
    except BrokenPipeError:  # `torchlint check | head`
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the exit-time flush
        except OSError:
            pass
        sys.exit(EXIT_FINDINGS)
    except KeyboardInterrupt:  # before a command started
        click.echo("torchlint: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except OSError as exc:
        if exc.filename is None and exc.errno in _OUTPUT_FAILURES:  # writing stdout
            output_error(exc)
        else:
            error(f"internal error: {exc!r} (please report it)")
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - last line of defence: one line, exit 2
        error(f"internal error: {exc!r} (please report it)")
        sys.exit(EXIT_ERROR)
