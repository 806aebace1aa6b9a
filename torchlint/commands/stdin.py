"""``torchlint check -`` / ``--stdin-filename PATH``: lint the source on stdin (an editor's
buffer) with the settings of PATH, as if it were that file. With ``--fix`` the (fixed)
source goes to stdout and the findings to stderr. A path that ``force-exclude`` excludes is
passed through untouched and reported clean, so editors and pre-commit skip it."""

from __future__ import annotations

import sys

from torchlint.codes import syntax_error_at
from torchlint.config.file_settings import FileSettings
from torchlint.config.workspace import Workspace
from torchlint.run.file import lint_one
from torchlint.run.outcome import FileOutcome, Mode
from torchlint.run.runner import Pinned
from torchlint.source import DecodeError, SourceFile


def check_stdin(path: str, workspace: Workspace, mode: Mode
                ) -> tuple[FileOutcome | None, str]:
    """The outcome, and the text its remaining findings refer to; no outcome when the path
    is excluded (``force-exclude``)."""
    data = sys.stdin.buffer.read()
    if path != "-" and workspace.settings_for(path).force_excluded(path):
        if mode.fix:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        return None, ""
    settings = workspace.for_file(path)
    if path.endswith(".ipynb"):
        return _notebook(path, data, settings, mode)
    try:
        source = SourceFile.from_bytes(path, data)
    except DecodeError as exc:
        diag = syntax_error_at(path, exc.line, exc.column, str(exc))
        if mode.fix:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        return FileOutcome(path, [diag]), ""
    outcome = lint_one(source, settings, mode)
    text = source.text
    if mode.fix:
        text = outcome.fixed_text if outcome.fixed_text is not None else source.text
        sys.stdout.buffer.write(source.with_text(text).to_bytes())
        sys.stdout.flush()
    return outcome, text


def _notebook(path: str, data: bytes, settings: FileSettings, mode: Mode
              ) -> tuple[FileOutcome, str]:
    """A notebook on stdin: linted by cells like a notebook file; with --fix the (fixed)
    notebook goes to stdout."""
    from torchlint.run.notebook import process_notebook

    outcome = process_notebook(path, Pinned({path: settings}), mode,  # type: ignore[arg-type]
                               data=data)
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    if mode.fix:
        if outcome.fixed_text is not None:
            sys.stdout.buffer.write(outcome.fixed_text.encode("utf-8"))
        else:
            sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return outcome, text
