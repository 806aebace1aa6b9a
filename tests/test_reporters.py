"""Reporter details: escaping, statistics, the progress bar's on/off rules."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from torchlint.diagnostic import Diagnostic, Edit, Fix
from torchlint.reporters import RENDERERS, Sources
from torchlint.reporters.github import format_github
from torchlint.reporters.statistics import count_by_rule, render_statistics
from torchlint.run.progress import MIN_FILES, wants_progress, with_progress


def _diag(code: str = "TL301", fix: Fix | None = None, cell: int | None = None,
          message: str = "m", path: str = "a.py") -> Diagnostic:
    return Diagnostic(path, 2, 3, 2, 7, code, "some-rule", message, fix, cell)


def test_github_escapes_data_and_properties() -> None:
    line = format_github(_diag(message="100% bad\nreally, truly: bad", path="dir,x/a:b.py"))
    assert line.startswith("::error title=torchlint (TL301),file=dir%2Cx/a%3Ab.py,line=2,")
    assert line.endswith("::dir,x/a:b.py:2:3: TL301 100%25 bad%0Areally, truly: bad")
    assert "\n" not in line


def test_github_notebook_cells_go_in_the_message() -> None:
    line = format_github(_diag(cell=4, path="nb.ipynb"))
    assert "line=" not in line
    assert line.endswith("::nb.ipynb:cell 4:2:3: TL301 m")


def test_statistics_markers() -> None:
    safe = Fix.safe(Edit(0, 1, "x"))
    unsafe = Fix.unsafe(Edit(0, 1, "x"))
    diagnostics = [_diag("TL301", safe), _diag("TL301", safe), _diag("TL101", unsafe),
                   _diag("TL001")]
    counts = {c.code: (c.count, c.marker) for c in count_by_rule(diagnostics)}
    assert counts == {"TL301": (2, "[*]"), "TL101": (1, "[-]"), "TL001": (1, "[ ]")}
    stream = io.StringIO()
    render_statistics(diagnostics, stream)
    assert stream.getvalue().splitlines()[0] == "2\tTL301\t[*] some-rule"


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_every_renderer_handles_no_findings(name: str) -> None:
    stream = io.StringIO()
    RENDERERS[name]([], stream, Sources())
    if name == "junit":  # one passing case: CI systems read an empty report as no tests
        root = ET.fromstring(stream.getvalue())
        assert (root.get("tests"), root.get("failures")) == ("1", "0")
    elif name == "rdjson":
        assert json.loads(stream.getvalue())["diagnostics"] == []
    else:
        assert stream.getvalue().strip() in ("", "[]") or name == "sarif"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal_outside_ci() -> None:
    assert wants_progress(MIN_FILES, _Tty(), {})
    assert not wants_progress(MIN_FILES - 1, _Tty(), {})
    assert not wants_progress(MIN_FILES, io.StringIO(), {})
    assert not wants_progress(MIN_FILES, _Tty(), {"CI": "true"})
    assert not wants_progress(MIN_FILES, _Tty(), {"CI": "1"})
    assert wants_progress(MIN_FILES, _Tty(), {"CI": "false"})
    assert not wants_progress(MIN_FILES, _Tty(), {"TERM": "dumb"})
    assert not wants_progress(MIN_FILES, _Tty(), {"TORCHLINT_NO_PROGRESS": "1"})
    assert wants_progress(MIN_FILES, _Tty(), {"TORCHLINT_NO_PROGRESS": "0"})
    assert list(with_progress(iter(range(3)), 3, io.StringIO(), {})) == [0, 1, 2]


def _stderr_on_a_terminal(project: Path, env: dict[str, str], *args: str) -> str:
    pty = pytest.importorskip("pty")
    import select

    main_fd, child_fd = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k != "CI"}
    environ.update(env, TERM="xterm-256color", COLUMNS="100")
    proc = subprocess.Popen([sys.executable, "-m", "torchlint", "check", "--no-cache", "-j",
                             "1", *args, "."], cwd=project, stdout=subprocess.DEVNULL,
                            stderr=child_fd, env=environ)
    os.close(child_fd)
    chunks = []
    while True:
        ready, _, _ = select.select([main_fd], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(main_fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(main_fd)
    return b"".join(chunks).decode(errors="replace")


def test_progress_bar_on_a_real_terminal(tmp_path: Path) -> None:
    for number in range(MIN_FILES + 10):
        (tmp_path / f"m{number}.py").write_text("import torch\nx = torch.ones(1)\n")
    shown = _stderr_on_a_terminal(tmp_path, {})
    assert "checking" in shown and "All checks passed" in shown
    in_ci = _stderr_on_a_terminal(tmp_path, {"CI": "true"})
    assert "checking" not in in_ci and "All checks passed" in in_ci
    piped = subprocess.run([sys.executable, "-m", "torchlint", "check", "--no-cache", "."],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "checking" not in piped.stderr
    # never with -q or -s, nor with a format meant for machines
    assert _stderr_on_a_terminal(tmp_path, {}, "-q") == ""
    assert _stderr_on_a_terminal(tmp_path, {}, "-s") == ""
    quiet_json = _stderr_on_a_terminal(tmp_path, {}, "--output-format", "json")
    assert "checking" not in quiet_json and "All checks passed" in quiet_json


def test_progress_counts_every_file_as_its_result_arrives(tmp_path: Path) -> None:
    """Results arrive in the order workers finish (largest files first); the count follows
    them, never waiting for the alphabetically first file."""
    from torchlint.config.settings import Settings
    from torchlint.run.outcome import Mode
    from torchlint.run.runner import run

    paths = []
    for number in range(12):  # the alphabetically first file is the largest
        path = tmp_path / f"m{number:02d}.py"
        path.write_text("import torch\nx = torch.ones(1).cuda()\n" * (40 if number == 0 else 1))
        paths.append(str(path))
    seen: list[int] = []
    outcomes = []
    for outcome in run(paths, Settings(root=str(tmp_path)), Mode(), jobs=2,
                       progress=seen.append):
        outcomes.append((outcome.path, sum(seen)))
    assert sum(seen) == len(paths)
    assert [path for path, _ in outcomes] == paths  # the output order stays the paths'
    assert outcomes[-1][1] == len(paths)


def _full(tmp_path: Path, text: str, diagnostic: Diagnostic) -> list[str]:
    path = tmp_path / "a.py"
    path.write_text(text, encoding="utf-8")
    stream = io.StringIO()
    RENDERERS["full"]([replace(diagnostic, path=str(path))], stream, Sources())
    return stream.getvalue().splitlines()


def test_full_underlines_under_wide_characters_and_tabs(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    text = 'import torch\nif 1:\n\tx = "日本語🙂"; y = torch.ones(3).cuda()\n'
    # torch.ones(3).cuda() is characters 18..37 of line 3
    lines = _full(tmp_path, text, Diagnostic("a.py", 3, 18, 3, 38, "TL301", "r", "m"))
    (shown,) = [line for line in lines if line.startswith("3 | ")]
    (marker,) = [line for line in lines if "^" in line]
    assert "\t" not in shown  # the tab is expanded to its stop, not shrunk to one space
    assert shown == '3 |     x = "日本語🙂"; y = torch.ones(3).cuda()'
    # the carets start under the "t" of torch, counting terminal cells (CJK/emoji = 2)
    wide = sum(2 if ord(ch) > 0x2E80 else 1 for ch in shown[: shown.index("torch")])
    assert marker.index("^") == wide
    assert marker.count("^") == len("torch.ones(3).cuda()")


def test_full_shows_no_line_after_the_final_newline(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    lines = _full(tmp_path, "import torch\nx = torch.ones(3).cuda()\n",
                  Diagnostic("a.py", 2, 5, 2, 25, "TL301", "r", "m"))
    assert not any(line.startswith("3 |") for line in lines)


def test_cached_files_count_without_skewing_the_time_left() -> None:
    from torchlint.run.progress import ProgressBar

    with ProgressBar(100, _Tty(), environ={}) as bar:
        assert bar.shown
        bar.skip(60)  # answered from the cache at once
        task = bar._progress.tasks[0]
        assert task.completed == 60 and task.speed is None  # no speed from the cache hits
        bar.advance(1)
        assert bar._progress.tasks[0].completed == 61


def _render(name: str, diagnostics: list[Diagnostic], sources: Sources) -> str:
    stream = io.StringIO()
    RENDERERS[name](diagnostics, stream, sources)
    return stream.getvalue()


def test_junit_is_one_suite_per_file_and_one_failed_case_per_finding(tmp_path: Path,
                                                                    monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    findings = [_diag("TL301", path=str(tmp_path / "pkg" / "a.py")),
                _diag("TL704", path="b.py", message='uses <"&">'),
                _diag("TL301", path="b.py"),
                _diag("TL702", path="nb.ipynb", cell=3)]
    text = _render("junit", findings, Sources())
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(text)
    assert root.tag == "testsuites" and root.get("name") == "torchlint"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "4", "0")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert sorted(suites) == ["b.py", "nb.ipynb", "pkg/a.py"]  # paths relative to the cwd
    assert [(s.get("tests"), s.get("failures")) for s in suites.values()] == [
        ("1", "1"), ("2", "2"), ("1", "1")]
    cases = suites["b.py"].findall("testcase")
    assert [c.get("name") for c in cases] == ["org.torchlint.TL301", "org.torchlint.TL704"]
    assert {(c.get("classname"), c.get("line"), c.get("column")) for c in cases} == {
        ("b", "2", "3")}
    failure = cases[1].find("failure")
    assert failure is not None and failure.get("message") == 'uses <"&">'
    assert failure.text == 'line 2, col 3, TL704 uses <"&">'
    notebook = suites["nb.ipynb"].find("testcase/failure")
    assert notebook is not None and notebook.text == "cell 3, line 2, col 3, TL702 m"


# reviewdog's DiagnosticResult (proto/rdf/reviewdog.proto) as a JSON schema: the shape an
# rdjson report must have; no other keys are allowed, so a misspelt one fails
_POSITION = {"type": "object", "additionalProperties": False,
             "properties": {"line": {"type": "integer", "minimum": 1},
                            "column": {"type": "integer", "minimum": 1}}}
_RANGE = {"type": "object", "additionalProperties": False, "required": ["start"],
          "properties": {"start": _POSITION, "end": _POSITION}}
_SOURCE = {"type": "object", "additionalProperties": False, "required": ["name"],
           "properties": {"name": {"type": "string"}, "url": {"type": "string"}}}
_SEVERITY = {"enum": ["UNKNOWN_SEVERITY", "ERROR", "WARNING", "INFO"]}
RDJSON_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["diagnostics"],
    "properties": {
        "source": _SOURCE, "severity": _SEVERITY,
        "diagnostics": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["message", "location"],
            "properties": {
                "message": {"type": "string"},
                "location": {"type": "object", "additionalProperties": False,
                             "required": ["path"],
                             "properties": {"path": {"type": "string"}, "range": _RANGE}},
                "severity": _SEVERITY, "source": _SOURCE,
                "code": {"type": "object", "additionalProperties": False, "required": ["value"],
                         "properties": {"value": {"type": "string"}, "url": {"type": "string"}}},
                "suggestions": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False,
                    "required": ["range", "text"],
                    "properties": {"range": _RANGE, "text": {"type": "string"}}}},
                "original_output": {"type": "string"},
            }}},
    },
}


def test_rdjson_has_reviewdogs_shape_byte_columns_and_fixes_as_suggestions(
        tmp_path: Path, monkeypatch) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    monkeypatch.chdir(tmp_path)
    text = 'x = "é"; y = old(1)\n'
    (tmp_path / "a.py").write_text(text, encoding="utf-8")
    start = text.index("old")
    fixed = Diagnostic("a.py", 1, start + 1, 1, start + 7, "TL702", "rule", "use new",
                       Fix.unsafe(Edit(start, start + 3, "new")))
    plain = Diagnostic(str(tmp_path / "a.py"), 1, 1, 1, 2, "TL704", "rule", "m")
    notebook = _diag("TL301", Fix.safe(Edit(0, 1, "x")), cell=2, path="nb.ipynb")
    report = json.loads(_render("rdjson", [fixed, plain, notebook], Sources()))
    jsonschema.validate(report, RDJSON_SCHEMA)
    assert report["source"]["name"] == "torchlint" and report["severity"] == "ERROR"
    first, second, third = report["diagnostics"]
    # columns count UTF-8 bytes: "é" is two
    assert first["location"] == {"path": "a.py", "range": {
        "start": {"line": 1, "column": start + 2}, "end": {"line": 1, "column": start + 8}}}
    assert first["code"] == {"value": "TL702"} and first["message"] == "use new"
    assert first["suggestions"] == [{"range": {"start": {"line": 1, "column": start + 2},
                                               "end": {"line": 1, "column": start + 5}},
                                     "text": "new"}]
    assert second["location"]["path"] == "a.py" and "suggestions" not in second
    # a notebook's cells are JSON strings in the stored file: no suggestion, the cell named
    assert third["message"] == "cell 2: m" and "suggestions" not in third
    with pytest.raises(jsonschema.ValidationError):  # the checks can fail
        jsonschema.validate({"diagnostics": [{"message": "m", "location": {"file": "a"}}]},
                            RDJSON_SCHEMA)
