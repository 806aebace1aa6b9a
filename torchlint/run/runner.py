"""Lint (and fix) many files. Each file is handled by :func:`process_file`, a pure function."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Union

from torchlint.config.file_settings import FileSettings, SettingsSource
from torchlint.registry import all_rules
from torchlint.run.cache import Cache, open_cache
from torchlint.run.file import process_python_file, read_bytes
from torchlint.run.interrupt import at_work, stop_workers, worker_signals
from torchlint.run.outcome import FileOutcome, Mode, cached_result_suffices

if TYPE_CHECKING:
    import multiprocessing.context
    from concurrent.futures import ProcessPoolExecutor

# The engine (libcst and the rules), the notebook step and the process pool are imported
# only when a file must be linted: a run answered from the cache never loads them.


# Where each file's results are cached: one folder for every file, or a folder per file
# (each configuration's own), or None for no cache.
CacheDirs = Union[str, os.PathLike, Callable[[str], Union[str, None]], None]


class Pinned:
    """The settings of each file of a run, resolved once by the main process (workers
    receive these instead of looking for configurations themselves)."""

    def __init__(self, settings: dict[str, FileSettings]) -> None:
        self.settings = settings

    def for_file(self, path: str) -> FileSettings:
        return self.settings[path]


def process_file(path: str, settings: SettingsSource, mode: Mode) -> FileOutcome:
    """Read, lint, maybe fix and write one file. Never raises for a bad file."""
    return _process(path, settings, mode, None)


def _process(path: str, settings: SettingsSource, mode: Mode, cache: Cache | None
             ) -> FileOutcome:
    if path.endswith(".ipynb"):
        from torchlint.run.notebook import process_notebook

        return process_notebook(path, settings, mode)  # type: ignore[arg-type]
    return process_python_file(path, settings, mode, cache)


def _guarded(path: str, settings: SettingsSource, mode: Mode, cache: Cache | None
             ) -> FileOutcome:
    """:func:`_process`, turning a bug anywhere (a rule, the engine) into a one-line error,
    and timing it."""
    started = time.perf_counter()
    outcome = _guarded_run(path, settings, mode, cache)
    outcome.seconds = time.perf_counter() - started
    return outcome


def _guarded_run(path: str, settings: SettingsSource, mode: Mode, cache: Cache | None
                 ) -> FileOutcome:
    try:
        return _process(path, settings, mode, cache)
    except (KeyboardInterrupt, SystemExit):
        raise
    except RecursionError:
        return FileOutcome(path, error="internal error: the file is nested too deeply")
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run
        where = _innermost_frame(exc)
        return FileOutcome(path, error=f"internal error: {type(exc).__name__}: {exc}{where}")


def _innermost_frame(exc: BaseException) -> str:
    tb = exc.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return f" (at {os.path.basename(code.co_filename)}:{tb.tb_lineno} in {code.co_name})"


# ------------------------------------------------------------------ many files
_SMALL_RUN = 4  # fewer files to compute than this: no worker processes


def _worker_chunk(items: list[tuple[str, FileSettings, Cache | None]], mode: Mode
                  ) -> list[FileOutcome]:
    with at_work():  # a stopping signal ends the worker here, the file it was on undone
        return [_guarded(path, Pinned({path: settings}), mode, cache)
                for path, settings, cache in items]


def _worker_start() -> None:
    """A worker builds and drops one syntax tree after another, with few reference cycles:
    the imported modules need no garbage collection passes, and young objects fewer (a
    libcst parse allocates millions: with CPython's default thresholds, collections took
    about a tenth of a cold run's CPU; with these, about a fiftieth)."""
    import gc

    worker_signals()
    gc.freeze()
    gc.set_threshold(100_000, 50, 50)


def _file_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _chunks(paths: list[str], jobs: int) -> list[list[str]]:
    """Largest files first (so no worker is left with a big one at the end), in small chunks."""
    by_size = sorted(paths, key=_file_size, reverse=True)
    total = sum(_file_size(p) for p in paths) or 1
    budget = max(total // (jobs * 16), 1)  # about 16 chunks a worker
    chunks: list[list[str]] = []
    current: list[str] = []
    current_size = 0
    for path in by_size:
        current.append(path)
        current_size += _file_size(path)
        if current_size >= budget or len(current) >= 32:
            chunks.append(current)
            current, current_size = [], 0
    if current:
        chunks.append(current)
    return chunks


def _pool_context() -> multiprocessing.context.BaseContext:
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    # fork: workers start in milliseconds with the rules already imported
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


@contextmanager
def _stopped_on_exit(pool: ProcessPoolExecutor) -> Iterator[None]:
    """Shut ``pool`` down when done; when interrupted (Ctrl-C, SIGTERM) or abandoned, stop
    its workers at once instead of waiting for the queued work."""
    try:
        yield
    except BaseException:
        stop_workers(pool)
        raise
    pool.shutdown(wait=True)


def _run_parallel(paths: list[str], settings: Pinned, mode: Mode,
                  caches: dict[str, Cache | None], jobs: int
                  ) -> Iterator[tuple[str, FileOutcome]]:
    """Outcomes of ``paths`` in completion order; a dying worker costs only its own file.

    When a worker dies, every unfinished chunk fails with it; those files are retried one
    a task, and a file whose pool breaks again is run alone in a pool of its own, so only
    the file that kills its worker is reported.
    """
    pending = _chunks(paths, jobs)
    # what is loaded by now (libcst, the rules, the settings) lives as long as the run: kept
    # out of the collector, whose passes in each worker would walk all of it and, touching
    # every object, copy the pages the workers share with this process (gc.freeze's
    # documented use before a fork); given back to it once the workers are done
    gc.freeze()
    try:
        yield from _rounds(pending, settings, mode, caches, jobs)
    finally:
        gc.unfreeze()


def _rounds(pending: list[list[str]], settings: Pinned, mode: Mode,
            caches: dict[str, Cache | None], jobs: int
            ) -> Iterator[tuple[str, FileOutcome]]:
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    round_number = 0
    while pending:
        round_number += 1
        broken: list[list[str]] = []
        isolate = round_number >= 3
        groups = [[chunk] for chunk in pending] if isolate else [pending]
        for group in groups:
            workers = 1 if isolate else min(jobs, len(group))
            pool = ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context(),
                                       initializer=_worker_start)
            with _stopped_on_exit(pool):
                futures = {pool.submit(_worker_chunk, [(p, settings.for_file(p), caches[p])
                                                       for p in chunk], mode): chunk
                           for chunk in group}
                for future in as_completed(futures):
                    chunk = futures[future]
                    try:
                        outcomes = future.result()
                    except BrokenProcessPool:
                        broken.append(chunk)
                        continue
                    except Exception as exc:  # noqa: BLE001 - e.g. an outcome that cannot pickle
                        outcomes = [FileOutcome(p, error=f"internal error: {exc}") for p in chunk]
                    for outcome in outcomes:
                        yield outcome.path, outcome
        if isolate:
            for chunk in broken:
                for path in chunk:
                    yield path, FileOutcome(path, error="internal error: the worker process "
                                            "checking this file died")
            return
        pending = [[path] for chunk in broken for path in chunk]


def run(paths: Iterable[str], settings: SettingsSource, mode: Mode, *,
        jobs: int | None = None, cache_dir: CacheDirs = None,
        progress: Callable[[int], None] | None = None,
        answered: Callable[[int], None] | None = None,
        walked: Sequence[str] | None = None) -> Iterator[FileOutcome]:
    """Outcomes in the order of ``paths``, whatever ``jobs`` is.

    ``settings``: each file's settings (a configuration's, or a workspace's nearest per
    file), resolved here once. ``jobs``: worker processes (None: CPU count). ``cache_dir``:
    where results are cached (see :data:`CacheDirs`). ``progress(n)`` is called as ``n``
    more files are done, in whatever order they finish; ``answered(n)`` (default:
    ``progress``) once for the ``n`` files the cache answers at the start. ``walked``: the folders searched
    whole; once every outcome is known, each cache drops the entries of files under them
    that the run did not meet. Cache hits are answered here without parsing; the rest go to
    worker processes unless there are only a few.
    """
    paths = list(paths)
    unique = list(dict.fromkeys(paths))
    pinned = Pinned({path: settings.for_file(path) for path in unique})
    caches = _caches(unique, cache_dir)
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    done: dict[str, FileOutcome] = {}
    todo: list[str] = []
    for path in unique:
        hit = _from_cache(path, pinned, mode, caches[path])
        if hit is not None:
            done[path] = hit
        else:
            todo.append(path)
    report_cached = answered or progress
    if report_cached is not None and done:
        report_cached(len(done))
    serial = jobs <= 1 or len(todo) < _SMALL_RUN
    if todo and not serial:
        _load_engine()  # once, inherited by the forked workers (alone, a file may not need it)
    if serial:
        computed: Iterator[tuple[str, FileOutcome]] = (
            (path, _guarded(path, pinned, mode, caches[path])) for path in todo)
    else:
        computed = _run_parallel(todo, pinned, mode, caches, jobs)
    # yield in the order of ``paths`` as soon as each next outcome is known
    index = 0
    for path, outcome in computed:
        done[path] = outcome
        if progress is not None:
            progress(1)
        while index < len(paths) and paths[index] in done:
            yield done[paths[index]]
            index += 1
    while index < len(paths):
        yield done[paths[index]]
        index += 1
    if walked is not None:
        _prune(caches, walked)


def _caches(paths: list[str], cache_dir: CacheDirs) -> dict[str, Cache | None]:
    """Each file's cache (opened once per folder)."""
    if cache_dir is None or not paths:
        return dict.fromkeys(paths)
    if not callable(cache_dir):
        cache = open_cache(cache_dir)
        return dict.fromkeys(paths, cache)
    opened: dict[str, Cache | None] = {}
    basis: str | None = None
    caches: dict[str, Cache | None] = {}
    for path in paths:
        folder = cache_dir(path)
        if folder is None:
            caches[path] = None
            continue
        if folder not in opened:
            if basis is None:
                from torchlint.run.cache import cache_basis

                basis = cache_basis()
            opened[folder] = Cache(os.path.abspath(folder), basis)
        caches[path] = opened[folder]
    return caches


def _prune(caches: dict[str, Cache | None], walked: Sequence[str]) -> None:
    by_cache: dict[Cache, list[str]] = {}
    for path, cache in caches.items():
        if cache is not None:
            by_cache.setdefault(cache, []).append(path)
    for cache, touched in by_cache.items():
        cache.prune(touched, walked)


def _load_engine() -> None:
    """Import libcst, the enabled rules and their screening checks here, once, so that
    forked workers inherit them."""
    import torchlint.engine.lint  # noqa: F401
    import torchlint.fix.fixer  # noqa: F401
    from torchlint.engine.triage import load_checks

    load_checks(rule.requires for rule in all_rules().values() if rule.requires is not None)


def _from_cache(path: str, settings: Pinned, mode: Mode, cache: Cache | None
                ) -> FileOutcome | None:
    if cache is None or path.endswith(".ipynb"):
        return None
    try:
        data = read_bytes(path, stdin=False)  # a pipe (/dev/stdin) is read once, by the worker
    except OSError:
        return None  # the worker reports it
    cached = cache.lookup(path, cache.key(path, data, settings.for_file(path).fingerprint))
    if cached is None or not cached_result_suffices(cached.diagnostics, mode):
        return None
    return FileOutcome(path, cached.diagnostics, cached=True, preview_only=cached.preview_only)
