"""Hostile input: whatever is on disk, torchlint reports findings or one-line errors, never a
traceback, and fixes write faithfully (atomic, same mode, same encoding and newlines)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from torchlint.config.file_settings import FileSettings
from torchlint.config.settings import Settings
from torchlint.engine.parse import parse
from torchlint.run import file as run_file
from torchlint.run.outcome import Mode
from torchlint.run.runner import process_file, run
from torchlint.source import write_atomic

MOVE = b"x = torch.autograd.Variable(torch.ones(3))"
FIXED = b"x = torch.ones(3)"
SETTINGS = Settings(select=("ALL",))


def _write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _codes(path: str, mode: Mode = Mode()) -> list[str]:
    outcome = process_file(path, SETTINGS, mode)
    assert outcome.error is None, outcome.error
    return [d.code for d in outcome.diagnostics]


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "torchlint", "check", "--no-cache",
                             "--select", "ALL", *args], capture_output=True, text=True, cwd=cwd,
                            timeout=600)
    assert "Traceback" not in result.stderr, result.stderr
    return result


# ------------------------------------------------------------------ undecodable, odd bytes
def test_nul_bytes_are_a_syntax_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "nul.py", b"import torch\nx = 1\x00\n")
    assert _codes(path) == ["TL001"]
    result = _cli(path)
    assert result.returncode == 1 and "TL001" in result.stdout


def test_invalid_utf8_is_a_syntax_error_at_its_place(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.py", b"import torch\nname = '\xff\xfe'\n")
    (diag,) = process_file(path, SETTINGS, Mode()).diagnostics
    assert (diag.code, diag.line, diag.column) == ("TL001", 2, 9)
    result = _cli(path)
    assert result.returncode == 1 and "bad.py:2:9: TL001" in result.stdout


def test_unknown_coding_cookie_is_a_syntax_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "cookie.py", b"# -*- coding: klingon -*-\nx = 1\n")
    assert _codes(path) == ["TL001"]


def test_latin1_with_coding_cookie_is_read_and_fixed_in_latin1(tmp_path: Path) -> None:
    head = b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9t\xe9'\n"
    path = _write(tmp_path, "latin.py", head + MOVE + b"\n")
    assert _codes(path) == ["TL704"]
    process_file(path, SETTINGS, Mode(fix=True))
    assert Path(path).read_bytes() == head + FIXED + b"\n"


def test_bom_is_kept(tmp_path: Path) -> None:
    path = _write(tmp_path, "bom.py", b"\xef\xbb\xbfimport torch\n" + MOVE + b"\n")
    diags = process_file(path, SETTINGS, Mode()).diagnostics
    assert [(d.code, d.line, d.column) for d in diags] == [("TL704", 2, 5)]
    process_file(path, SETTINGS, Mode(fix=True))
    assert Path(path).read_bytes() == b"\xef\xbb\xbfimport torch\n" + FIXED + b"\n"


def test_crlf_is_kept(tmp_path: Path) -> None:
    path = _write(tmp_path, "crlf.py", b"import torch\r\n" + MOVE + b"\r\ny = 2\r\n")
    assert _codes(path) == ["TL704"]
    process_file(path, SETTINGS, Mode(fix=True))
    assert Path(path).read_bytes() == b"import torch\r\n" + FIXED + b"\r\ny = 2\r\n"


@pytest.mark.parametrize("data", [
    b"import torch\n" + MOVE + b"\r\ny = 2\r",
    b"import torch\r" + MOVE + b"\ny = 2\r\n",
    b"import torch\r\n\r\r\n" + MOVE,
])
def test_mixed_newlines(tmp_path: Path, data: bytes) -> None:
    path = _write(tmp_path, "mixed.py", data)
    assert "TL704" in _codes(path)
    process_file(path, SETTINGS, Mode(fix=True))
    after = Path(path).read_bytes()
    assert FIXED in after
    assert after.replace(FIXED, MOVE) == data  # nothing else moved, newlines included
    parse(after.decode())
    assert process_file(path, SETTINGS, Mode(fix=True)).fixed == 0


def test_tabs(tmp_path: Path) -> None:
    data = b"import torch\nif True:\n\t" + MOVE + b"\n\tif x:\n\t\ty = 1\n"
    path = _write(tmp_path, "tabs.py", data)
    diags = process_file(path, SETTINGS, Mode()).diagnostics
    assert [(d.code, d.line, d.column) for d in diags] == [("TL704", 3, 6)]
    process_file(path, SETTINGS, Mode(fix=True))
    assert Path(path).read_bytes() == data.replace(MOVE, FIXED)


def test_inconsistent_tabs_are_a_syntax_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "tabs.py", b"if True:\n\tx = 1\n        y = 2\n")
    assert _codes(path) == ["TL001"]


# ------------------------------------------------------------------ size and depth
def _five_megabytes() -> str:
    blob = "# " + "x" * 98 + "\n"
    body = "import torch\n" + '"""' + blob * 50_000 + '"""\n'
    return body + "def f(i):\n    return torch.autograd.Variable(torch.ones(i))\n" * 200


def test_five_megabyte_file_is_linted_when_max_file_size_allows(tmp_path: Path) -> None:
    path = _write(tmp_path, "big.py", _five_megabytes().encode())
    assert os.path.getsize(path) >= 5_000_000
    outcome = process_file(path, replace(SETTINGS, max_file_size=8_000_000), Mode())
    assert outcome.error is None and outcome.warning is None
    assert [d.code for d in outcome.diagnostics].count("TL704") == 200


def test_file_over_max_file_size_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = _write(tmp_path, "big.py", _five_megabytes().encode())
    outcome = process_file(path, SETTINGS, Mode())
    assert outcome.diagnostics == [] and outcome.error is None
    assert outcome.warning == ("skipped: 5.1 MB is over max-file-size (500 kB); raise it in the "
                               "configuration to lint it")
    _write(tmp_path, "ok.py", b"import torch\n" + MOVE + b"\n")
    result = _cli(str(tmp_path))
    # one line naming the file, the limit and the key; the exit status is the findings'
    (line,) = [line for line in result.stderr.splitlines() if "big.py" in line]
    assert line.endswith("big.py: skipped: 5.1 MB is over max-file-size (500 kB); raise it in "
                         "the configuration to lint it")
    assert result.returncode == 1 and "ok.py:2:5: TL704" in result.stdout
    assert "big.py" not in result.stdout
    raised = _cli(str(tmp_path), "--config", "max-file-size = \"6 MB\"")
    assert raised.stdout.count("TL704") == 201 and "big.py" not in raised.stderr


def test_over_max_file_size_alone_exits_clean(tmp_path: Path) -> None:
    path = _write(tmp_path, "gen.py", b"x = [" + b"1, " * 400_000 + b"]\n")
    result = _cli(path)
    assert result.returncode == 0 and "max-file-size (500 kB)" in result.stderr
    # the summary does not count a skipped file as checked
    assert "All checks passed! (0 files checked, 1 skipped)" in result.stderr


def test_notebook_program_over_max_file_size_is_skipped(tmp_path: Path) -> None:
    import json

    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ["import torch\n", MOVE.decode() + "\n", "# " + "x" * 1_100_000]}
    notebook = {"cells": [cell], "metadata": {"language_info": {"name": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    path = _write(tmp_path, "big.ipynb", json.dumps(notebook).encode())
    outcome = process_file(path, SETTINGS, Mode())
    assert outcome.diagnostics == [] and "max-file-size" in (outcome.warning or "")
    linted = process_file(path, replace(SETTINGS, max_file_size=2_000_000), Mode())
    assert [d.code for d in linted.diagnostics] == ["TL704"] and linted.warning is None


@pytest.mark.parametrize(("text", "size"), [
    ("4000000", 4_000_000), ("4 MB", 4_000_000), ("512kB", 512_000), ("2 MiB", 2 << 20),
    ("1.5mb", 1_500_000), ("lots", None), ("4 parsecs", None)])
def test_sizes_are_read_in_bytes_or_units(text: str, size: int | None) -> None:
    from torchlint.engine.limits import parse_size

    assert parse_size(text) == size


def test_oversize_names_the_size_the_limit_and_the_key() -> None:
    from torchlint.engine.limits import oversize

    assert oversize(1_000_000, 1_000_000) is None
    assert oversize(10_200_000, 1_000_000) == (
        "skipped: 10.2 MB is over max-file-size (1 MB); raise it in the configuration to lint it")
    assert oversize(10**12, None) is None


@pytest.mark.parametrize("text", [
    "x = " + "(" * 3000 + "1" + ")" * 3000 + "\n",  # overflowed libcst's native stack
    "x = " + "[" * 1000 + "]" * 1000 + "\n",
    "x = " + "1 + " * 20000 + "1\n",  # cubic time in libcst
    "x = " + "not " * 5000 + "1\n",
    "x = " + "f(" * 500 + ")" * 500 + "\n",
    "x = (\n" + "f(\n" * 400 + ")\n" * 400 + ")\n",
    "x = " + "1 + \\\n" * 3000 + "1\n",
])
def test_very_deep_nesting_is_a_syntax_error_not_a_crash(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, "deep.py", text.encode())
    outcome = process_file(path, SETTINGS, Mode())
    assert outcome.error is None
    assert [d.code for d in outcome.diagnostics] == ["TL001"]
    assert "nested too deeply" in outcome.diagnostics[0].message


def test_deep_but_valid_nesting_is_linted(tmp_path: Path) -> None:
    blocks = "".join("    " * i + "if x:\n" for i in range(95)) + "    " * 95 + MOVE.decode()
    path = _write(tmp_path, "deep.py", ("import torch\n" + blocks + "\n").encode())
    outcome = process_file(path, SETTINGS, Mode())
    assert outcome.error is None
    assert [d.code for d in outcome.diagnostics] in (["TL704"], ["TL001"])


def test_deep_nesting_through_the_cli_in_parallel(tmp_path: Path) -> None:
    for i in range(6):
        _write(tmp_path, f"ok{i}.py", b"import torch\n" + MOVE + b"\n")
    _write(tmp_path, "deep.py", ("x = " + "(" * 5000 + ")" * 5000 + "\n").encode())
    result = _cli(str(tmp_path), "--jobs", "2")
    assert result.returncode == 1
    assert result.stdout.count("TL704") == 6 and "deep.py:1:1: TL001" in result.stdout


# ------------------------------------------------------------------ the file system
def test_symlink_loop_in_the_tree(tmp_path: Path) -> None:
    _write(tmp_path, "ok.py", b"import torch\n" + MOVE + b"\n")
    os.symlink("loop.py", tmp_path / "loop.py")
    (tmp_path / "sub").mkdir()
    os.symlink("..", tmp_path / "sub" / "up")  # a directory loop: not followed
    result = _cli(str(tmp_path))
    assert "ok.py:2:5: TL704" in result.stdout
    assert result.stderr.count("loop.py") <= 1


def test_symlink_loop_in_the_runner(tmp_path: Path) -> None:
    os.symlink("loop.py", tmp_path / "loop.py")
    outcome = process_file(str(tmp_path / "loop.py"), SETTINGS, Mode())
    assert outcome.error is not None and "\n" not in outcome.error


def test_directory_symlink_loop_is_not_followed(tmp_path: Path) -> None:
    _write(tmp_path, "ok.py", b"import torch\n" + MOVE + b"\n")
    (tmp_path / "sub").mkdir()
    os.symlink("..", tmp_path / "sub" / "up")
    result = _cli(str(tmp_path))
    assert result.returncode == 1 and result.stdout.count("TL704") == 1


def test_unreadable_file_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, "secret.py", b"import torch\n" + MOVE + b"\n")
    other = _write(tmp_path, "ok.py", b"import torch\n" + MOVE + b"\n")
    if os.geteuid() == 0:  # root reads anything: make the read fail the way chmod 000 does

        real = run_file.read_bytes

        def denied(p: str) -> bytes:
            if p == path:
                raise PermissionError(13, "Permission denied", p)
            return real(p)

        monkeypatch.setattr(run_file, "read_bytes", denied)
        outcomes = list(run([path, other], SETTINGS, Mode(), jobs=1))
        assert outcomes[0].error == "cannot read: Permission denied"
        assert outcomes[1].diagnostics
        return
    os.chmod(path, 0)
    try:
        result = _cli(str(tmp_path))
    finally:
        os.chmod(path, 0o644)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if "secret.py" in line]
    assert lines == [f"torchlint: error: {path}: cannot read: Permission denied"]
    assert "ok.py:2:5: TL704" in result.stdout


def test_file_deleted_while_the_run_is_going(tmp_path: Path) -> None:
    paths = [_write(tmp_path, f"m{i}.py", b"import torch\n" + MOVE + b"\n") for i in range(8)]
    outcomes = run(paths, SETTINGS, Mode(), jobs=1)
    first = next(outcomes)
    os.unlink(paths[5])
    rest = list(outcomes)
    assert first.diagnostics
    assert rest[4].error == "cannot read: No such file or directory"
    assert all(o.diagnostics for i, o in enumerate(rest) if i != 4)


def test_file_deleted_before_the_workers_reach_it(tmp_path: Path) -> None:
    paths = [_write(tmp_path, f"m{i}.py", b"import torch\n" + MOVE + b"\n") for i in range(8)]
    os.unlink(paths[2])
    outcomes = list(run(paths, SETTINGS, Mode(), jobs=2, cache_dir=tmp_path / "cache"))
    assert outcomes[2].error == "cannot read: No such file or directory"
    assert sum(1 for o in outcomes if o.diagnostics) == 7


def test_a_directory_named_like_a_source_file(tmp_path: Path) -> None:
    (tmp_path / "pkg.py").mkdir()
    outcome = process_file(str(tmp_path / "pkg.py"), SETTINGS, Mode())
    assert outcome.error is not None and outcome.error.startswith("cannot read")


# ------------------------------------------------------------------ writing
def test_fix_keeps_the_file_mode(tmp_path: Path) -> None:
    path = _write(tmp_path, "tool.py", b"import torch\n" + MOVE + b"\n")
    os.chmod(path, 0o751)
    process_file(path, SETTINGS, Mode(fix=True))
    assert FIXED in Path(path).read_bytes()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".torchlint-tmp")]


def test_unchanged_content_is_not_written(tmp_path: Path) -> None:
    path = _write(tmp_path, "clean.py", b"import torch\n" + FIXED + b"\n")
    before = os.stat(path)
    os.utime(path, ns=(before.st_atime_ns, 1_000_000_000))
    process_file(path, SETTINGS, Mode(fix=True))
    after = os.stat(path)
    assert after.st_mtime_ns == 1_000_000_000 and after.st_ino == before.st_ino
    assert write_atomic(path, Path(path).read_bytes()) is False


def test_fix_through_a_symlink_writes_the_target(tmp_path: Path) -> None:
    target = _write(tmp_path, "real.py", b"import torch\n" + MOVE + b"\n")
    link = tmp_path / "link.py"
    os.symlink("real.py", link)
    process_file(str(link), SETTINGS, Mode(fix=True))
    assert link.is_symlink()
    assert FIXED in Path(target).read_bytes()


def test_write_is_atomic_when_it_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, "code.py", b"import torch\n" + MOVE + b"\n")

    def broken(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    outcome = process_file(path, SETTINGS, Mode(fix=True))
    assert outcome.error is not None and "cannot write" in outcome.error
    assert Path(path).read_bytes() == b"import torch\n" + MOVE + b"\n"
    assert os.listdir(tmp_path) == ["code.py"]


def test_read_only_directory_fix_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    path = _write(tmp_path, "code.py", b"import torch\n" + MOVE + b"\n")

    def no_temp(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("tempfile.mkstemp", no_temp)
    outcome = process_file(path, SETTINGS, Mode(fix=True))
    assert outcome.error is not None and "\n" not in outcome.error
    assert Path(path).read_bytes() == b"import torch\n" + MOVE + b"\n"


def test_syntax_error_in_the_cli_exits_1(tmp_path: Path) -> None:
    _write(tmp_path, "broken.py", b"def f(:\n    pass\n")
    result = _cli(str(tmp_path))
    assert result.returncode == 1 and "broken.py:1:" in result.stdout and "TL001" in result.stdout


_ODD_SHAPES = {
    "one long line": "x = 1  # " + "#" * 50_000 + "\n",
    "CR-only newlines": "# note\r" * 5_000,
    "unclosed brackets": "m.train(\n" * 5_000,
    "comment blocks": ("# note\n" * 99 + "x = 1\n") * 50,
    "blank stretch": "x = 1\n" + (" " * 100 + "\n") * 100 + "y = 2\n",
    "continuation lines": "x = 1\n" + " \\\n" * 1_000,
    "mostly hashes": ("x = 1  " + "#=" * 40 + "\n") * 500,
    "huge": "x = 1\n" * 200_000,
}


@pytest.mark.parametrize("shape", sorted(_ODD_SHAPES))
def test_texts_that_could_make_patterns_slow_are_decided_by_cheap_ones(shape: str) -> None:
    """Prefilter patterns scan comments, blanks and brackets; on these shapes a search could
    take minutes, so only cheap patterns decide and such a file is simply parsed."""
    from torchlint.engine.prefilter import unusual

    assert unusual("import torch\n" + _ODD_SHAPES[shape])


def test_ordinary_code_gets_the_full_prefilter() -> None:
    from fixture_support import FIXTURES

    from torchlint.engine.prefilter import unusual

    texts = [p.read_text(encoding="utf-8") for p in FIXTURES.rglob("*.py")]
    assert texts and not any(unusual(t) for t in texts)


def test_an_odd_file_loses_no_finding() -> None:
    """With cheap patterns only, a file is parsed more often, never less: findings stay."""
    from torchlint.engine.lint import lint_source
    from torchlint.registry import all_rules
    from torchlint.source import SourceFile

    code = "import torch\nx = torch.zeros(3).cuda()\ny = torch.load('w.pt')\n"
    rules = list(all_rules().values())
    plain = lint_source(SourceFile("a.py", code), FileSettings.for_rules(rules)).diagnostics
    odd = lint_source(SourceFile("a.py", code + "z = 1  # " + "#" * 5_000 + "\n"), FileSettings.for_rules(rules)).diagnostics
    assert plain and [(d.line, d.code) for d in odd] == [(d.line, d.code) for d in plain]
