"""Stopping a run: Ctrl-C (SIGINT) and SIGTERM stop the main process and its workers
promptly, and nothing is written after the signal.

The main process turns SIGTERM into :class:`Terminated`, raised like Ctrl-C's
``KeyboardInterrupt`` (it is one), so the same unwinding runs for both: a file being
written is left as it was (see :func:`torchlint.source.write_atomic`), the workers are
stopped (:func:`stop_workers`) and the command line says what happened. A worker stops on
either signal: at work, the signal unwinds the file it is on and the worker exits; idle,
it exits at once.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

EXIT_INTERRUPTED = 128 + 2  # as a shell reports a process that SIGINT ended
EXIT_TERMINATED = 128 + 15


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived. A ``KeyboardInterrupt``, so that whatever lets Ctrl-C through
    lets it through too."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated


def handle_sigterm() -> None:
    """Make SIGTERM raise :class:`Terminated` in this (main) process."""
    if hasattr(signal, "SIGTERM") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)


# ------------------------------------------------------------------ worker processes
_at_work = False


def _worker_signal(signum: int, frame: Any) -> None:
    if not _at_work:
        os._exit(128 + signum)  # between files: nothing to unwind
    raise Terminated


def worker_signals() -> None:
    """In a worker process: SIGINT and SIGTERM stop it (see :func:`at_work`)."""
    for name in ("SIGINT", "SIGTERM"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _worker_signal)


@contextmanager
def at_work() -> Iterator[None]:
    """A worker's work: a stopping signal raises inside it, unwinding what it was doing
    (a write is undone), and the worker then exits without taking more work."""
    global _at_work
    _at_work = True
    try:
        yield
    except KeyboardInterrupt as stop:
        os._exit(EXIT_TERMINATED if isinstance(stop, Terminated) else EXIT_INTERRUPTED)
    finally:
        _at_work = False


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool`` now: queued work is cancelled and each worker is sent SIGTERM (then
    killed if it has not gone within seconds)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if terminate is not None:
        terminate()
    else:
        for process in processes:
            try:
                process.terminate()
            except (OSError, ValueError):
                pass
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.join(5)
        if process.is_alive():
            process.kill()
            process.join(5)
