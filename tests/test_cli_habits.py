"""The command-line habits a Ruff user relies on: stdin, empty selectors, --diff's exit
status, statistics, the concise line, rules and explain, and the options that adopt,
fix and narrow a run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchlint.cli import main

BAD = "import torch\n\nx = torch.autograd.Variable(torch.ones(3))\n"
FIXED = "import torch\n\nx = torch.ones(3)\n"
UNSAFE = 'import torch\n\nstate = torch.load("a.pt", map_location="cpu")\n'


def write(path: Path, text: str = BAD) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def check(cwd: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, ["check", "--no-cache", "--isolated", *args],
                                  input=stdin, env=env, catch_exceptions=False)
    finally:
        os.chdir(old)


# ------------------------------------------------------------------ stdin
def test_stdin_filename_alone_reads_stdin_not_the_folder(tmp_path: Path) -> None:
    write(tmp_path / "other.py")  # must not be linted
    result = check(tmp_path, "--stdin-filename", "editor/buffer.py", stdin=BAD)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "editor/buffer.py:3:5: TL704 [*] torch.autograd.Variable is deprecated; "
        "tensors track gradients themselves"]
    fixed = check(tmp_path, "--fix", "--stdin-filename", "editor/buffer.py", stdin=BAD)
    assert fixed.exit_code == 0 and fixed.stdout == FIXED
    assert not (tmp_path / "editor").exists()
    both = check(tmp_path, "--stdin-filename", "b.py", "other.py", stdin=BAD)
    assert "b.py:3:5" in both.stdout and "other.py" not in both.stdout
    assert "ignoring other.py" in both.stderr


def test_undecodable_stdin_with_fix_gives_the_bytes_back(tmp_path: Path) -> None:
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(main, ["check", "--no-cache", "--isolated", "--fix",
                                           "--stdin-filename", "x.py"],
                                    input=b"x = '\xff\xfe'\n", catch_exceptions=False)
    finally:
        os.chdir(old)
    assert result.stdout_bytes == b"x = '\xff\xfe'\n"  # an editor never loses its buffer


# ------------------------------------------------------------------ empty selectors
@pytest.mark.parametrize("args", [
    ("--select", ""), ("--select", ","), ("--ignore", ""), ("--extend-select", " "),
    ("--fixable", ""), ("--unfixable", ""), ("--extend-ignore", ""),
    ("--per-file-ignores", ""), ("--per-file-ignores", "tests/*:"), ("--config", ""),
    ("--target-torch", ""),
])
def test_empty_values_exit_2_instead_of_turning_rules_off(tmp_path: Path,
                                                          args: tuple[str, str]) -> None:
    write(tmp_path / "a.py")
    result = check(tmp_path, *args, "a.py")
    assert result.exit_code == 2, result.output
    assert "All checks passed" not in result.output
    assert result.stderr.startswith("torchlint: error:")


# ------------------------------------------------------------------ --diff, statistics
def test_diff_exits_0_when_there_is_nothing_to_change(tmp_path: Path) -> None:
    write(tmp_path / "a.py", FIXED)
    write(tmp_path / "b.py", UNSAFE)  # a finding with only an unsafe fix
    result = check(tmp_path, "--preview", "--diff", ".")
    assert result.exit_code == 0 and result.stdout == ""
    assert check(tmp_path, "--preview", "--diff", "--unsafe-fixes", ".").exit_code == 1
    write(tmp_path / "c.py")
    changes = check(tmp_path, "--diff", ".")
    assert changes.exit_code == 1 and "+x = torch.ones(3)\n" in changes.stdout
    assert "Would fix 1 error" in changes.stderr


def test_statistics_rows_are_data_only(tmp_path: Path) -> None:
    write(tmp_path / "a.py", BAD + UNSAFE.split("\n", 2)[2] + "torch.load('b.pt')\n")
    result = check(tmp_path, "--preview", "--statistics", ".")
    rows = result.stdout.splitlines()
    assert rows and all(re.fullmatch(r"\s*\d+\tTL\d{3}\t\[[* -]\] [a-z-]+", row) for row in rows)
    counts = sorted(int(row.split("\t")[0]) for row in rows)
    assert counts == [1, 1, 2]  # sort/awk can rely on it
    assert "[*] fixable with --fix" in result.stderr  # the legend is in the summary
    as_json = json.loads(check(tmp_path, "--preview", "--statistics", "--output-format",
                               "json").stdout)
    assert {row["code"] for row in as_json} == {"TL704", "TL601", "TL602"}
    for fmt in ("sarif", "github", "gitlab", "json-lines", "full", "pylint"):
        rejected = check(tmp_path, "--statistics", "--output-format", fmt)
        assert rejected.exit_code == 2 and "--statistics" in rejected.stderr, fmt


# ------------------------------------------------------------------ the concise line
def test_concise_marks_what_fix_would_fix(tmp_path: Path) -> None:
    write(tmp_path / "a.py", BAD + 'state = torch.load("a.pt", map_location="cpu")\n')
    lines = check(tmp_path, "--preview", ".").stdout.splitlines()
    assert lines[0].startswith("a.py:3:5: TL704 [*] torch.autograd.Variable is deprecated")
    assert lines[1].startswith("a.py:4:9: TL601 torch.load()")  # unsafe: no mark
    unsafe = check(tmp_path, "--preview", "--unsafe-fixes", ".").stdout.splitlines()
    assert unsafe[1].startswith("a.py:4:9: TL601 [*] torch.load()")


def test_concise_colour_follows_no_color_and_force_color(tmp_path: Path) -> None:
    write(tmp_path / "a.py")
    plain = check(tmp_path, ".").stdout
    assert "\x1b[" not in plain  # not a terminal
    forced = check(tmp_path, ".", env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[1m\x1b[31mTL704\x1b[0m" in forced and "\x1b[36m[*]\x1b[0m" in forced
    assert "\x1b[" not in check(tmp_path, ".", env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout


def test_concise_summary_points_to_explain_and_the_full_format(tmp_path: Path) -> None:
    write(tmp_path / "a.py")
    result = check(tmp_path, ".")
    assert "`torchlint explain TL704`" in result.stderr
    assert "--output-format full" in result.stderr
    assert "explain" not in check(tmp_path, "--output-format", "full", ".").stderr.split(
        "\n")[-2]


# ------------------------------------------------------------------ rules and explain
def test_rules_piped_is_one_plain_line_per_rule() -> None:
    listing = subprocess.run([sys.executable, "-m", "torchlint", "rules"], capture_output=True,
                             text=True, check=True).stdout
    lines = listing.splitlines()
    assert all(re.fullmatch(r"TL\d{3}\t[a-z0-9-]+\t[a-z, ();-]+\t[a-z/-]+\t.+", line)
               for line in lines)
    family = [line for line in lines if "TL7" in line.split("\t")[0]]
    assert len(family) == len([line for line in lines if line.startswith("TL7")]) >= 8
    tl103 = next(line for line in lines if line.startswith("TL103"))
    assert "`nn.ModuleList([...])`" in tl103  # square brackets survive
    table = subprocess.run([sys.executable, "-m", "torchlint", "rules", "--format", "table"],
                           capture_output=True, text=True, check=True).stdout
    assert "ModuleList([...])" in table.replace("\n", " ").replace("│", " ").replace("  ", " ")


def test_explain_a_prefix_lists_the_family() -> None:
    result = CliRunner().invoke(main, ["explain", "TL3"])
    assert result.exit_code == 0
    assert "rules start with TL3" in result.stdout
    assert "TL301  create-then-move" in result.stdout and "TL401" not in result.stdout
    unknown = CliRunner().invoke(main, ["explain", "TL3O1"])
    assert unknown.exit_code == 2 and "did you mean" in unknown.stderr


# ------------------------------------------------------------------ fixing habits
def test_fix_only_show_fixes_and_exit_non_zero_on_fix(tmp_path: Path) -> None:
    target = write(tmp_path / "a.py", BAD + 'torch.load("a.pt")\n')
    result = check(tmp_path, "--fix-only", "--show-fixes", "a.py")
    assert result.exit_code == 0 and result.stdout == ""  # remaining findings not reported
    assert "Fixed 1 error:\n- a.py:\n    1 × TL704 (autograd-variable)" in result.stderr
    assert target.read_text().startswith(FIXED)
    write(tmp_path / "b.py")
    strict = check(tmp_path, "--fix", "--exit-non-zero-on-fix", "--ignore", "TL6", "b.py")
    assert strict.exit_code == 1 and "0 remaining" in strict.stderr
    assert check(tmp_path, "--fix", "--exit-non-zero-on-fix", "--ignore", "TL6",
                 "b.py").exit_code == 0  # nothing left to change


def test_fixable_unfixable_and_extend_fixable(tmp_path: Path) -> None:
    target = write(tmp_path / "a.py", BAD + "y = torch.autograd.Variable(torch.zeros(2))\n")
    assert check(tmp_path, "--fix", "--unfixable", "TL704", "a.py").exit_code == 1
    assert target.read_text().startswith(BAD)
    assert check(tmp_path, "--fix", "--fixable", "TL6", "a.py").exit_code == 1
    assert target.read_text().startswith(BAD)
    assert check(tmp_path, "--fix", "--fixable", "TL6", "--extend-fixable", "TL704",
                 "a.py").exit_code == 0
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\nunfixable = ["TL7"]\n')
    again = write(tmp_path / "b.py")
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        CliRunner().invoke(main, ["check", "--no-cache", "--fix", "b.py"])
    finally:
        os.chdir(old)
    assert again.read_text() == BAD


def test_silent_verbose_and_the_narrowing_options(tmp_path: Path) -> None:
    write(tmp_path / "a.py")
    write(tmp_path / "tests" / "t.py")
    silent = check(tmp_path, "-s", ".")
    assert silent.exit_code == 1 and silent.output == ""
    verbose = check(tmp_path, "-v", ".")
    assert "[torchlint] configuration none (--isolated)" in verbose.stderr
    assert "checked" in verbose.stderr and "found 2 files" in verbose.stderr
    assert check(tmp_path, "--extend-ignore", "TL704", ".").exit_code == 0
    narrowed = check(tmp_path, "--per-file-ignores", "tests/*:TL704", ".")
    assert narrowed.stdout.startswith("a.py:") and "tests/t.py" not in narrowed.stdout
    assert check(tmp_path, "--per-file-ignores", "tests/*:TL704", "--extend-per-file-ignores",
                 "a.py:TL7", ".").exit_code == 0
    assert check(tmp_path, "-q", "-s", ".").exit_code == 2


def test_add_noqa_adopts_an_existing_code_base(tmp_path: Path) -> None:
    source = textwrap.dedent('''\
        import torch

        x = torch.autograd.Variable(torch.ones(3))  # a comment stays
        y = torch.autograd.Variable(torch.zeros(2))  # noqa: E501
        z = torch.load(
            "a.pt")
        doc = torch.tensor(
            """text"""), torch.load("""b
        .pt""")
    ''')
    target = write(tmp_path / "a.py", source)
    result = check(tmp_path, "--preview", "--add-noqa", "a.py")
    assert result.exit_code == 0, result.output
    assert "Added 4 noqa directives." in result.stderr
    text = target.read_text()
    assert "x = torch.autograd.Variable(torch.ones(3))  # a comment stays  # noqa: TL704\n" in text
    assert "y = torch.autograd.Variable(torch.zeros(2))  # noqa: E501, TL704\n" in text
    assert 'z = torch.load(  # noqa: TL601, TL602\n' in text
    assert '.pt""")  # noqa: TL601, TL602\n' in text  # after the multi-line string
    assert check(tmp_path, "a.py").exit_code == 0  # everything is suppressed now
    assert check(tmp_path, "--add-noqa", "a.py").stderr.startswith("Added 0 noqa")
    assert check(tmp_path, "--add-noqa", "--fix", "a.py").exit_code == 2


def test_watch_checks_again_when_a_file_changes(tmp_path: Path) -> None:
    pytest.importorskip("watchfiles")
    write(tmp_path / "a.py", FIXED)
    env = dict(os.environ, WATCHFILES_FORCE_POLLING="1", NO_COLOR="1")
    proc = subprocess.Popen([sys.executable, "-m", "torchlint", "check", "--no-cache",
                             "--isolated", "--watch", "."], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output = ""
        deadline = time.monotonic() + 60
        import select

        def read_until(marker: str) -> bool:
            nonlocal output
            while marker not in output and time.monotonic() < deadline:
                ready, _, _ = select.select([proc.stdout], [], [], 0.5)
                if ready:
                    line = proc.stdout.readline()  # type: ignore[union-attr]
                    if not line:
                        return False
                    output += line
            return marker in output

        def read_until_quickly(marker: str) -> bool:
            nonlocal deadline
            saved, deadline = deadline, time.monotonic() + 2
            try:
                return read_until(marker)
            finally:
                deadline = saved

        assert read_until("All checks passed"), output
        # The watcher starts right after the first run prints: a write that lands before it
        # has taken its first look is not a change to it, so write again until one is seen.
        for attempt in range(20):
            time.sleep(0.5)
            (tmp_path / "a.py").write_text(BAD + "\n" * attempt)
            if read_until_quickly("File change detected"):
                break
        assert read_until("TL704"), output
        assert "File change detected (a.py)" in output
        # SIGTERM ends a watch as it ends any run: one line and the signal's status
        proc.terminate()
        rest, _ = proc.communicate(timeout=30)
        assert proc.returncode == 143, output + rest
        assert "torchlint: terminated" in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def test_a_selection_that_enables_nothing_is_said(tmp_path: Path) -> None:
    write(tmp_path / "a.py")
    write(tmp_path / "pyproject.toml", "[tool.torchlint]\nselect = []\n")
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(main, ["check", "--no-cache", "a.py"])
    finally:
        os.chdir(old)
    assert result.exit_code == 0
    assert "warning: no rule is enabled" in result.stderr and "pyproject.toml" in result.stderr


def test_help_groups_the_options_as_the_readme_does_and_names_their_variables() -> None:
    """``check --help`` has the README's option tables as sections, each option in its
    table's section, and says which environment variable an option reads."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    commands = readme[readme.index("### `torchlint check"):readme.index("### `torchlint server")]
    tables = {match.group(1): set(re.findall(r"^\| `(--[a-z-]+)", match.group(2), re.M))
              for match in re.finditer(r"\*\*([A-Z][a-z ]+)\*\*[^\n]*\n(.*?)(?=\n\n\*\*|\n\nExit)",
                                       commands, re.S)}
    assert list(tables) == ["Fixing", "Rules and settings", "Files", "Output and running"]
    help_text = CliRunner().invoke(main, ["check", "--help"], terminal_width=100).output
    sections = dict(re.findall(r"^([A-Z][a-z ]+):\n(.*?)(?=^\S|\Z)", help_text, re.M | re.S))
    assert list(sections)[:4] == list(tables)
    for title, options in tables.items():
        listed = set(re.findall(r"^  (?:-\w, )?(--[a-z-]+)", sections[title], re.M))
        assert options <= listed, (title, options - listed)
    variables = re.findall(r"env\s+var:\s+(\w+)", help_text)
    assert variables == ["TORCHLINT_OUTPUT_FORMAT", "TORCHLINT_NO_CACHE", "TORCHLINT_CACHE_DIR"]
