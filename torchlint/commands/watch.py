"""``--watch``: lint, then lint again whenever a Python file, a notebook or a configuration
or ignore file under the given paths changes (``watchfiles``, an optional extra)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Sequence

import click

from torchlint.commands.report import EXIT_ERROR, error
from torchlint.run.interrupt import Terminated

WATCHED_SUFFIXES = (".py", ".pyi", ".ipynb", ".toml", ".cfg", ".txt", ".yml", ".yaml")
WATCHED_NAMES = (".gitignore", ".ignore")


def _relevant(change: object, path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith(WATCHED_SUFFIXES) or name in WATCHED_NAMES


def watch(paths: Sequence[str], run_once: Callable[[], int]) -> int:
    """Run ``run_once`` now and after every relevant change, until interrupted."""
    try:
        import watchfiles
    except ImportError:
        error("--watch needs the watchfiles package: pip install 'torchlint[watch]' "
              "(or pip install watchfiles)")
        return EXIT_ERROR
    click.echo("Watching for file changes (Ctrl-C to stop).", err=True)
    run_once()
    roots = [p for p in paths if os.path.exists(p)] or ["."]
    # watchfiles turns whatever a signal handler raises into a plain KeyboardInterrupt:
    # remember that SIGTERM came, to end the watch as SIGTERM ends any run
    terminated = _note_sigterm()
    try:
        for changes in watchfiles.watch(*roots, watch_filter=_relevant, debounce=300,
                                        raise_interrupt=True):
            changed = sorted({os.path.relpath(path) for _, path in changes})
            click.echo(f"\nFile change detected ({', '.join(changed[:3])}"
                       f"{', ...' if len(changed) > 3 else ''}); checking again.", err=True)
            run_once()
    except KeyboardInterrupt:
        if terminated:
            raise Terminated from None  # "torchlint: terminated", status 143
        # Ctrl-C is how a watch is meant to end
    return 0


def _note_sigterm() -> list[bool]:
    """Make SIGTERM raise :class:`Terminated` and note it in the list returned."""
    noted: list[bool] = []
    if hasattr(signal, "SIGTERM") and threading.current_thread() is threading.main_thread():
        def on_sigterm(signum: int, frame: object) -> None:
            noted.append(True)
            raise Terminated

        signal.signal(signal.SIGTERM, on_sigterm)
    return noted
