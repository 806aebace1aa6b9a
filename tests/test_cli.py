"""The CLI contract: output lines, exit codes, stdout vs stderr, config, suppression, fixes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchlint.cli import main

BAD = "import torch\n\nx = torch.autograd.Variable(torch.ones(3))\n"
GOOD = "import torch\n\nx = torch.ones(3)\n"


def run(*args: str, cwd: Path | None = None, stdin: str | None = None):
    runner = CliRunner()
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return runner.invoke(main, list(args), input=stdin, catch_exceptions=False)
    finally:
        os.chdir(old)


def write(path: Path, text: str, **kwargs) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, **kwargs)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "pyproject.toml", "[tool.torchlint]\n")
    return tmp_path


def test_finding_line_format_and_exit_1(project: Path) -> None:
    write(project / "a.py", BAD)
    result = run("check", "--no-cache", "a.py", cwd=project)
    assert result.exit_code == 1
    assert result.stdout == (
        "a.py:3:5: TL704 [*] torch.autograd.Variable is deprecated; "
        "tensors track gradients themselves\n"
    )
    assert "Found 1 error." in result.stderr
    assert "1 fixable with the `--fix` option" in result.stderr


def test_clean_file_exits_0_with_summary_on_stderr(project: Path) -> None:
    write(project / "a.py", GOOD)
    result = run("check", "--no-cache", "a.py", cwd=project)
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "All checks passed" in result.stderr


def test_exit_zero_and_quiet(project: Path) -> None:
    write(project / "a.py", BAD)
    result = run("check", "--no-cache", "--exit-zero", "--quiet", "a.py", cwd=project)
    assert result.exit_code == 0
    assert result.stdout.startswith("a.py:3:5: TL704")
    assert result.stderr == ""


def test_output_is_sorted_by_path_line_column(project: Path) -> None:
    write(project / "b.py", BAD)
    write(project / "a" / "z.py",
          "import torch\ny = torch.autograd.Variable(torch.zeros(1)); "
          "z = torch.autograd.Variable(torch.ones(1))\n")
    result = run("check", "--no-cache", ".", cwd=project)
    locations = [line.split(": ")[0] for line in result.stdout.splitlines()]
    assert locations == ["a/z.py:2:5", "a/z.py:2:50", "b.py:3:5"]


def test_fix_writes_and_reports(project: Path) -> None:
    target = write(project / "a.py", BAD)
    result = run("check", "--no-cache", "--fix", "a.py", cwd=project)
    assert result.exit_code == 0
    assert target.read_text() == 'import torch\n\nx = torch.ones(3)\n'
    assert "1 fixed, 0 remaining" in result.stderr


def test_diff_writes_nothing(project: Path) -> None:
    target = write(project / "a.py", BAD)
    result = run("check", "--no-cache", "--diff", "a.py", cwd=project)
    assert target.read_text() == BAD
    assert result.exit_code == 1
    assert "-x = torch.autograd.Variable(torch.ones(3))" in result.stdout
    assert '+x = torch.ones(3)' in result.stdout


def test_select_ignore_extend_select(project: Path) -> None:
    write(project / "a.py", BAD)
    assert run("check", "--no-cache", "--ignore", "TL704", "a.py", cwd=project).exit_code == 0
    assert run("check", "--no-cache", "--ignore", "TL7", "a.py", cwd=project).exit_code == 0
    assert run("check", "--no-cache", "--select", "TL001", "a.py", cwd=project).exit_code == 0
    assert run("check", "--no-cache", "--select", "TL001", "--extend-select", "TL704", "a.py",
               cwd=project).exit_code == 1
    assert run("check", "--no-cache", "--select", "ALL", "a.py", cwd=project).exit_code == 1


def test_unknown_code_on_the_command_line_exits_2(project: Path) -> None:
    write(project / "a.py", BAD)
    result = run("check", "--no-cache", "--select", "TL3O1", "a.py", cwd=project)
    assert result.exit_code == 2
    assert "TL3O1" in result.stderr


def test_config_file_settings(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", textwrap.dedent("""
        [tool.torchlint]
        ignore = ["TL704"]
    """))
    write(tmp_path / "pkg" / "a.py", BAD)
    assert run("check", "--no-cache", "pkg", cwd=tmp_path).exit_code == 0
    # the command line overrides the file
    assert run("check", "--no-cache", "--select", "TL704", "pkg", cwd=tmp_path).exit_code == 1


def test_extend_module_bases_and_model_names(tmp_path: Path) -> None:
    """Rule options from the configuration: a third-party module base class makes its
    subclasses module classes (TL101), and a project's own model name counts as a model
    in an evaluation function (TL401)."""
    code = textwrap.dedent("""
        import torch
        from mmengine.model import BaseModule
        from torch import nn

        class Head(BaseModule):
            def __init__(self):
                super().__init__()
                self.layers = [nn.Linear(4, 4) for _ in range(3)]

        def evaluate(policy, loader):
            for x in loader:
                policy(x)
    """)
    write(tmp_path / "a.py", code)
    write(tmp_path / "pyproject.toml", "[tool.torchlint]\n")
    plain = run("check", "--no-cache", "a.py", cwd=tmp_path)
    assert "TL101" not in plain.output and "TL401" not in plain.output
    write(tmp_path / "pyproject.toml", textwrap.dedent("""
        [tool.torchlint]
        extend-module-bases = ["mmengine.model.BaseModule"]
        extend-model-names = ["policy"]
    """))
    extended = run("check", "--no-cache", "a.py", cwd=tmp_path)
    assert "TL101" in extended.output and "TL401" in extended.output, extended.output


def test_config_is_found_from_a_subdirectory(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\nignore = ["TL704"]\n')
    write(tmp_path / "pkg" / "a.py", BAD)
    assert run("check", "--no-cache", "a.py", cwd=tmp_path / "pkg").exit_code == 0


def test_per_file_ignores_and_exclude(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", textwrap.dedent("""
        [tool.torchlint]
        extend-exclude = ["generated"]
        [tool.torchlint.per-file-ignores]
        "scripts/*.py" = ["TL7"]
    """))
    write(tmp_path / "scripts" / "a.py", BAD)
    write(tmp_path / "generated" / "b.py", BAD)
    write(tmp_path / "src" / "c.py", BAD)
    result = run("check", "--no-cache", ".", cwd=tmp_path)
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["src/c.py"]


def test_unfixable(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\nunfixable = ["TL704"]\n')
    target = write(tmp_path / "a.py", BAD)
    result = run("check", "--no-cache", "--fix", "a.py", cwd=tmp_path)
    assert result.exit_code == 1
    assert target.read_text() == BAD


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[tool.torchlint]\nselct = ["TL7"]\n', "selct"),
        ('[tool.torchlint]\nselect = ["TL999"]\n', "TL999"),
        ('[tool.torchlint]\nignore = ["TL704"]\nunfixable = [1]\n', "unfixable"),
        ("[tool.torchlint\n", "invalid TOML"),
    ],
)
def test_bad_config_exits_2_naming_the_problem(tmp_path: Path, body: str, message: str) -> None:
    write(tmp_path / "pyproject.toml", body)
    write(tmp_path / "a.py", BAD)
    result = run("check", "--no-cache", "a.py", cwd=tmp_path)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_noqa_comments(project: Path) -> None:
    write(project / "a.py", textwrap.dedent("""
        import torch
        a = torch.autograd.Variable(torch.ones(1))  # noqa
        b = torch.autograd.Variable(torch.ones(1))  # noqa: TL704
        c = torch.autograd.Variable(torch.ones(1))  # noqa:TL501, TL704
        d = torch.autograd.Variable(torch.ones(1))  # noqa: TL501
        e = torch.autograd.Variable(torch.ones(1))  # NOQA
    """))
    result = run("check", "--no-cache", "a.py", cwd=project)
    assert [line.split(":")[1] for line in result.stdout.splitlines()] == ["6"]


def test_file_level_noqa(project: Path) -> None:
    write(project / "a.py", "# torchlint: noqa\n" + BAD)
    assert run("check", "--no-cache", "a.py", cwd=project).exit_code == 0


def test_fixer_leaves_suppressed_findings_alone(project: Path) -> None:
    text = "import torch\nx = torch.autograd.Variable(torch.ones(3))  # noqa: TL704\n"
    target = write(project / "a.py", text)
    run("check", "--no-cache", "--fix", "a.py", cwd=project)
    assert target.read_text() == text


def test_unused_noqa_is_opt_in(project: Path) -> None:
    write(project / "a.py", "import torch\nx = torch.ones(3)  # noqa: TL704\n")
    assert run("check", "--no-cache", "a.py", cwd=project).exit_code == 0
    result = run("check", "--no-cache", "--extend-select", "TL002", "a.py", cwd=project)
    assert result.exit_code == 1
    assert "a.py:2:" in result.stdout and "TL002" in result.stdout


def test_syntax_error_is_a_finding_and_other_files_go_on(project: Path) -> None:
    write(project / "a.py", "def broken(:\n    pass\n")
    write(project / "b.py", BAD)
    result = run("check", "--no-cache", ".", cwd=project)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("a.py:1:") and "TL001" in lines[0]
    assert lines[1].startswith("b.py:3:5: TL704")


def test_undecodable_file_is_a_finding(project: Path) -> None:
    (project / "a.py").write_bytes(b"x = '\xff\xfe'\n")
    result = run("check", "--no-cache", "a.py", cwd=project)
    assert result.exit_code == 1
    assert "TL001" in result.stdout and "decode" in result.stdout


def test_missing_path_exits_2_with_one_line(project: Path) -> None:
    result = run("check", "--no-cache", "nope.py", cwd=project)
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0 and "nope.py" in result.stderr


def test_directory_without_python_files(project: Path) -> None:
    (project / "empty").mkdir()
    write(project / "empty" / "notes.txt", "hello")
    result = run("check", "--no-cache", "empty", cwd=project)
    assert result.exit_code == 0
    assert "No Python files" in result.stderr


def test_stdin_with_filename(project: Path) -> None:
    result = run("check", "--no-cache", "--stdin-filename", "model.py", "-", cwd=project,
                 stdin=BAD)
    assert result.exit_code == 1
    assert result.stdout.startswith("model.py:3:5: TL704")


def test_stdin_fix_prints_the_fixed_source(project: Path) -> None:
    result = run("check", "--no-cache", "--fix", "-", cwd=project, stdin=BAD)
    assert result.stdout == 'import torch\n\nx = torch.ones(3)\n'
    assert result.exit_code == 0


def test_rules_table_and_json() -> None:
    table = run("rules")
    assert table.exit_code == 0 and "TL301" in table.stdout and "create-then-move" in table.stdout
    payload = json.loads(run("rules", "--format", "json").stdout)
    entry = next(r for r in payload if r["code"] == "TL301")
    assert entry == {"code": "TL301", "name": "create-then-move", "default": True, "preview": False,
                     "fix": "sometimes", "summary": entry["summary"]}
    assert entry["summary"]


def test_explain_and_unknown_code() -> None:
    result = run("explain", "TL301")
    assert result.exit_code == 0 and "## Why is this bad?" in result.stdout
    assert run("explain", "create-then-move").exit_code == 0
    unknown = run("explain", "TL3011")
    assert unknown.exit_code == 2 and "did you mean" in unknown.stderr and "TL301" in unknown.stderr


# ---------------------------------------------------------------- preservation
def test_fix_keeps_crlf_bom_and_missing_final_newline(project: Path) -> None:
    data = b"\xef\xbb\xbfimport torch\r\n# note\r\nx = torch.autograd.Variable(torch.ones(3))"
    target = project / "a.py"
    target.write_bytes(data)
    run("check", "--no-cache", "--fix", "a.py", cwd=project)
    assert target.read_bytes() == (
        b'\xef\xbb\xbfimport torch\r\n# note\r\nx = torch.ones(3)')


def test_fix_keeps_latin1_encoding(project: Path) -> None:
    text = "# -*- coding: latin-1 -*-\nimport torch\n# caf\xe9\nx = torch.autograd.Variable(torch.ones(3))\n"
    target = project / "a.py"
    target.write_bytes(text.encode("latin-1"))
    run("check", "--no-cache", "--fix", "a.py", cwd=project)
    assert target.read_bytes() == text.replace(
        "torch.autograd.Variable(torch.ones(3))", 'torch.ones(3)').encode("latin-1")


def test_fix_keeps_file_mode(project: Path) -> None:
    target = write(project / "a.py", BAD)
    target.chmod(0o750)
    run("check", "--no-cache", "--fix", "a.py", cwd=project)
    assert target.stat().st_mode & 0o777 == 0o750


# ------------------------------------------------------------------ subprocess
def test_real_process_exit_codes_and_streams(project: Path) -> None:
    write(project / "a.py", BAD)
    cmd = [sys.executable, "-m", "torchlint", "check", "--no-cache", "a.py"]
    proc = subprocess.run(cmd, cwd=project, capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert proc.stdout.startswith("a.py:3:5: TL704")
    assert "Found 1 error." in proc.stderr
    proc = subprocess.run([*cmd[:-1], "missing.py"], cwd=project, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "torchlint", "check", "--bogus"], cwd=project,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2


def test_console_script_runs_the_demo() -> None:
    demo = Path(__file__).resolve().parent.parent / "fixtures" / "demo"
    proc = subprocess.run([sys.executable, "-m", "torchlint", "check", "--no-cache", str(demo)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert " TL" in proc.stdout


def test_diff_marks_a_missing_final_newline_on_the_right_line(project: Path) -> None:
    write(project / "a.py", "import torch\nx = torch.autograd.Variable(torch.ones(3))")
    result = run("check", "--no-cache", "--diff", "a.py", cwd=project)
    assert result.stdout.endswith(
        "-x = torch.autograd.Variable(torch.ones(3))\n\\ No newline at end of file\n"
        '+x = torch.ones(3)\n\\ No newline at end of file\n')
    assert result.stdout.startswith("--- a/a.py\n+++ b/a.py\n")


def test_a_crashing_rule_is_an_error_line_and_exit_2(project: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule that fails on a file never lets the run say "All checks passed!"."""
    from torchlint.rules.migration.tl704_autograd_variable import AutogradVariable

    def boom(self, node):  # type: ignore[no-untyped-def]
        raise ValueError("boom")

    monkeypatch.setattr(AutogradVariable, "visit_Call", boom)
    write(project / "a.py", BAD + "y = torch.load(f)\n")
    result = run("check", "--no-cache", "--preview", "--jobs", "1", "a.py", cwd=project)
    assert result.exit_code == 2
    assert "a.py: internal error in TL704: ValueError: boom" in result.stderr
    assert "TL601" in result.stdout  # the other rules still report
    write(project / "b.py", BAD)
    alone = run("check", "--no-cache", "--jobs", "1", "b.py", cwd=project)
    assert alone.exit_code == 2 and "All checks passed" not in alone.stderr
    assert "could not be fully checked" in alone.stderr
