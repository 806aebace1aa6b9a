"""``--watch``: lint, then lint again whenever a Python file, a notebook or a configuration
or ignore file under the given paths changes (``watchfiles``, an optional extra)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import click

from torchlint.commands.report import EXIT_ERROR, error

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
    try:
        for changes in watchfiles.watch(*roots, watch_filter=_relevant, debounce=300,
                                        raise_interrupt=False):
            changed = sorted({os.path.relpath(path) for _, path in changes})
            click.echo(f"\nFile change detected ({', '.join(changed[:3])}"
                       f"{', ...' if len(changed) > 3 else ''}); checking again.", err=True)
            run_once()
    except KeyboardInterrupt:
        pass
    return 0
