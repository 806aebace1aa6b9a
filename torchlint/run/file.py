"""One file's pipeline: lint a source (and fix it to a fixed point), or read a .py file,
answer from the cache or lint it, and write the fixes back."""

from __future__ import annotations

from collections.abc import Callable

from torchlint.analysis.project import Dependency
from torchlint.codes import SYNTAX_ERROR, syntax_error_at
from torchlint.config.file_settings import FileSettings, SettingsSource
from torchlint.engine.limits import oversize
from torchlint.engine.screen import narrowed, screen
from torchlint.run.cache import Cache
from torchlint.run.outcome import FileOutcome, Mode, cached_result_suffices, cannot_fix
from torchlint.source import DecodeError, SourceFile, read_file, write_atomic

# The engine (libcst and the rules) is imported only when a file must be linted: a run
# answered from the cache never loads it.


def lint_one(source: SourceFile, settings: FileSettings, mode: Mode,
             checkpoint: Callable[[], None] | None = None) -> FileOutcome:
    """Lint ``source`` (and with ``mode`` fix it, or diff the fixes). Writes nothing.
    ``checkpoint`` is called once the screen has passed the file, before libcst parses it:
    it may raise to stop a lint no longer wanted (the language server's stale versions)."""
    path = source.path
    skipped = oversize(len(source.text.encode("utf-8", "surrogatepass")), settings.max_file_size)
    if skipped is not None:
        return FileOutcome(path, warning=skipped)
    # the screen decides without libcst and the rules which rules can fire; the files of
    # the project it read are dependencies of the outcome (a cached one is redone when
    # one of them changes)
    learned: list[Dependency] = []
    codes = screen(source, settings, learned)
    if codes == frozenset():
        return FileOutcome(path, [], dependencies=learned)
    if checkpoint is not None:
        checkpoint()
    from torchlint.engine.lint import lint_source

    if codes is None or mode.fix or mode.diff:
        result = lint_source(source, settings)
    else:  # the screen has asked the prefilter already: the narrowed rules all pass it
        result = lint_source(source, narrowed(settings, codes), prefilter=False)
    error = _failures(result.rule_failures)
    if not (mode.fix or mode.diff) or not result.parsed:
        return FileOutcome(path, result.diagnostics, error=error,
                           dependencies=_joined(result.dependencies, learned),
                           preview_only=result.preview_only)
    from torchlint.fix.fixer import fix_source

    outcome = fix_source(source, settings, unsafe=mode.unsafe, result=result)
    changed = outcome.source.text != source.text
    codes = tuple(sorted(outcome.fixed_codes.items()))
    if mode.diff and changed:
        from torchlint.fix.text import unified_diff

        diff = unified_diff(source.text, outcome.source.text, path)
        return FileOutcome(path, result.diagnostics, fixed=0, diff=diff, error=error,
                           found=len(result.diagnostics), fixed_codes=codes,
                           preview_only=result.preview_only)
    error = error or _failures(outcome.result.rule_failures)
    return FileOutcome(path, outcome.result.diagnostics, fixed=outcome.fixed,
                       fixed_text=outcome.source.text if changed else None, error=error,
                       dependencies=_joined(outcome.result.dependencies, learned),
                       found=len(result.diagnostics), fixed_codes=codes,
                       preview_only=outcome.result.preview_only)


def _joined(found: list[Dependency], learned: list[Dependency]) -> list[Dependency]:
    """The dependencies of a lint and those of its screen, one per file, by path."""
    if not learned:
        return found
    joined = {d.path: d for d in learned}
    joined.update((d.path, d) for d in found)
    return sorted(joined.values(), key=lambda d: d.path)


def _failures(failures: list[str]) -> str | None:
    """One error line for the rules that crashed on a file (None: none did)."""
    if not failures:
        return None
    return "; ".join(failures) + " (the other rules' findings are reported; please report this)"


def read_bytes(path: str, *, stdin: bool = True) -> bytes:
    """A file's bytes; a FIFO, socket or device raises OSError instead of blocking."""
    return read_file(path, stdin=stdin)


def process_python_file(path: str, settings: SettingsSource, mode: Mode, cache: Cache | None
                        ) -> FileOutcome:
    """Read, lint, maybe fix and write one .py/.pyi file, through the cache when given."""
    try:
        data = read_bytes(path)
    except OSError as exc:
        return FileOutcome(path, error=f"cannot read: {exc.strerror or exc}")
    file_settings = settings.for_file(path)
    skipped = oversize(len(data), file_settings.max_file_size)
    if skipped is not None:
        return FileOutcome(path, warning=skipped)
    key = cache.key(path, data, file_settings.fingerprint) if cache is not None else None
    if cache is not None and key is not None:
        cached = cache.lookup(path, key)
        if cached is not None and cached_result_suffices(cached.diagnostics, mode):
            return FileOutcome(path, cached.diagnostics, cached=True,
                               preview_only=cached.preview_only)
    try:
        source = SourceFile.from_bytes(path, data)
    except DecodeError as exc:
        enabled_tl001 = SYNTAX_ERROR in file_settings.codes
        diags = [syntax_error_at(path, exc.line, exc.column, str(exc))] if enabled_tl001 else []
        if cache is not None and key is not None:
            cache.put(path, key, diags)
        return FileOutcome(path, diags)
    outcome = lint_one(source, file_settings, mode)
    if mode.fix and not mode.diff and outcome.fixed_text is not None:
        fixed_bytes = source.with_text(outcome.fixed_text).to_bytes()
        try:
            write_atomic(path, fixed_bytes)
        except (OSError, UnicodeEncodeError) as exc:
            # the file keeps every finding of the first lint: report those
            unfixed = lint_one(source, file_settings, Mode())
            return FileOutcome(path, unfixed.diagnostics, error=cannot_fix(exc),
                               unwritten=outcome.fixed, preview_only=unfixed.preview_only)
        if cache is not None:
            # what remains is the lint of the bytes now on disk
            cache.put(path, cache.key(path, fixed_bytes, file_settings.fingerprint),
                      outcome.diagnostics, outcome.dependencies, outcome.preview_only)
    elif cache is not None and key is not None and not outcome.error:
        cache.put(path, key, outcome.diagnostics, outcome.dependencies, outcome.preview_only)
    return outcome
