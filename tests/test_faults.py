"""Nothing lost, nothing hung, nothing surprising: special files, files that cannot be
written, output that cannot be written, and interrupted runs."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import libcst as cst
import pytest

from torchlint.config.discovery import discover
from torchlint.config.file_settings import FileSettings
from torchlint.config.settings import Settings
from torchlint.rule import Rule
from torchlint.run.outcome import Mode
from torchlint.run.runner import process_file, run

BAD = b"import torch\nx = torch.autograd.Variable(torch.ones(3))\n"
FIXED = b"import torch\nx = torch.ones(3)\n"
SETTINGS = Settings(select=("ALL",))
T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's torchlint, from any folder
fifos = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")


def _cli(*args: str, cwd: Path | None = None, stdin: bytes | None = None,
         stdout: int | None = None) -> subprocess.CompletedProcess[str]:
    """torchlint check in a subprocess; a run that blocks fails the test instead of
    hanging it (its whole process group is killed, workers included)."""
    command = [sys.executable, "-m", "torchlint", "check", "--no-cache", "--isolated", *args]
    process = subprocess.Popen(command, stdin=subprocess.PIPE if stdin is not None else
                               subprocess.DEVNULL,
                               stdout=stdout if stdout is not None else subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=cwd or ROOT, env=ENV,
                               start_new_session=True)
    try:
        out, err = process.communicate(stdin.decode() if stdin is not None else None,
                                       timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.communicate()
        raise
    assert "Traceback" not in err, err
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def _within(seconds: float, call: Callable[[], T]) -> T:
    """``call()``, failing the test if it has not returned within ``seconds`` (it may be
    blocked for good: it is left behind in a daemon thread)."""
    import threading

    box: list[T] = []
    thread = threading.Thread(target=lambda: box.append(call()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert box, f"still blocked after {seconds} s"
    return box[0]


# ------------------------------------------------------------------ 1: special files
@fifos
def test_a_fifo_in_a_folder_is_skipped_with_a_note(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "real.py").write_bytes(BAD)
    found = discover([str(tmp_path)], SETTINGS)
    assert found.files == [str(tmp_path / "real.py")]
    assert (str(tmp_path / "pipe.py"), "not a regular file (a FIFO)") in found.skipped
    result = _cli("-v", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert "real.py:2:5: TL704" in result.stdout
    assert "skipped pipe.py: not a regular file (a FIFO)" in result.stderr


@fifos
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_fifo_named_on_the_command_line_is_reported_not_read(tmp_path: Path, jobs: str
                                                               ) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    os.mkfifo(tmp_path / "pipe.ipynb")
    for i in range(4):
        (tmp_path / f"m{i}.py").write_bytes(BAD)
    result = _cli("--jobs", jobs, "pipe.py", "pipe.ipynb", *(f"m{i}.py" for i in range(4)),
                  cwd=tmp_path)
    assert result.returncode == 2
    assert "pipe.py: cannot read: not a regular file (a FIFO)" in result.stderr
    assert "pipe.ipynb: cannot read: not a regular file (a FIFO)" in result.stderr
    assert result.stdout.count("TL704") == 4


@fifos
@pytest.mark.parametrize("name", [".gitignore", "pyproject.toml", "requirements.txt",
                                  "setup.py", ".ignore"])
def test_a_fifo_among_the_configuration_files_is_not_waited_on(tmp_path: Path, name: str
                                                               ) -> None:
    os.mkfifo(tmp_path / name)
    (tmp_path / "real.py").write_bytes(BAD)
    result = _cli(".", cwd=tmp_path)
    assert result.returncode == 1
    assert "real.py:2:5: TL704" in result.stdout


@fifos
def test_the_reader_never_blocks_on_a_fifo_met_after_discovery(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "late.py")
    outcome = _within(120, lambda: process_file(str(tmp_path / "late.py"), SETTINGS,
                                                Mode(fix=True)))
    assert outcome.error == "cannot read: not a regular file (a FIFO)"


def test_a_device_named_like_a_source_file_is_reported(tmp_path: Path) -> None:
    os.symlink(os.devnull, tmp_path / "null.py")
    outcome = process_file(str(tmp_path / "null.py"), SETTINGS, Mode())
    assert outcome.error == "cannot read: not a regular file (a character device)"


@pytest.mark.parametrize("cache", [False, True])
def test_dev_stdin_named_explicitly_reads_the_pipe(tmp_path: Path, cache: bool) -> None:
    if not os.path.exists("/dev/stdin"):
        pytest.skip("no /dev/stdin")
    # with the cache on, the pipe must still be read only once (by the linting step)
    options = ["--cache-dir", str(tmp_path / "cache")] if cache else []
    result = subprocess.run([sys.executable, "-m", "torchlint", "check", "--isolated",
                             *options, *([] if cache else ["--no-cache"]), "/dev/stdin"],
                            input=BAD.decode(), capture_output=True, text=True, timeout=300,
                            cwd=ROOT, env=ENV)
    assert result.returncode == 1, result.stderr
    assert "/dev/stdin:2:5: TL704" in result.stdout


# ------------------------------------------------------------------ 4, 5, 6: writing fixes
def test_a_read_only_file_is_reported_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "frozen.py"
    path.write_bytes(BAD)
    os.chmod(path, 0o444)
    inode = os.stat(path).st_ino
    outcome = process_file(str(path), SETTINGS, Mode(fix=True))
    assert outcome.error == "cannot fix: read-only"
    assert path.read_bytes() == BAD and os.stat(path).st_ino == inode
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444
    # what is still on disk is reported, and the fix not written is counted
    assert [d.code for d in outcome.diagnostics] == ["TL704"]
    assert outcome.unwritten == 1 and outcome.fixed == 0


def test_hard_links_stay_one_file(tmp_path: Path) -> None:
    path = tmp_path / "code.py"
    path.write_bytes(BAD)
    os.chmod(path, 0o640)
    os.link(path, tmp_path / "alias.py")
    outcome = process_file(str(path), SETTINGS, Mode(fix=True))
    assert outcome.error is None and outcome.fixed == 1
    assert (tmp_path / "alias.py").read_bytes() == FIXED
    assert os.stat(path).st_ino == os.stat(tmp_path / "alias.py").st_ino
    assert os.stat(path).st_nlink == 2
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_a_file_name_near_the_limit_can_be_fixed(tmp_path: Path) -> None:
    path = tmp_path / ("m" * 250 + ".py")  # 253 bytes: the limit is 255
    path.write_bytes(BAD)
    outcome = process_file(str(path), SETTINGS, Mode(fix=True))
    assert outcome.error is None and outcome.fixed == 1
    assert path.read_bytes() == FIXED
    assert sorted(os.listdir(tmp_path)) == [path.name]


def test_fixes_that_cannot_be_written_are_said_in_the_summary(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_bytes(BAD)
    (tmp_path / "frozen.py").write_bytes(BAD)
    os.chmod(tmp_path / "frozen.py", 0o444)
    result = _cli("--fix", ".", cwd=tmp_path)
    assert result.returncode == 2
    assert (tmp_path / "ok.py").read_bytes() == FIXED
    assert (tmp_path / "frozen.py").read_bytes() == BAD
    assert "frozen.py:2:5: TL704" in result.stdout
    assert "torchlint: error: frozen.py: cannot fix: read-only" in result.stderr
    assert "No findings" not in result.stderr
    assert "Found 2 errors (1 fixed, 1 remaining)." in result.stderr
    assert "1 fix not written: frozen.py (read-only); it is unchanged." in result.stderr
    assert "fixable with the `--fix` option" not in result.stderr


# ------------------------------------------------------------------ 18: nothing fixable
def test_fix_says_when_nothing_has_a_safe_fix(tmp_path: Path) -> None:
    (tmp_path / "net.py").write_text("import torch.nn as nn\n\n\nclass Net(nn.Module):\n"
                                     "    def forward(self, x):\n        return x\n\n\n"
                                     "net = Net()\ny = net.forward(1)\n")  # an unsafe fix only
    result = _cli("--fix", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert "Found 1 error (0 fixed, 1 remaining): none of them has a safe fix." \
        in result.stderr
    assert "1 more fix available with `--fix --unsafe-fixes`" in result.stderr
    fixable = _cli("--fix", "--unfixable", "ALL", ".", cwd=tmp_path)
    assert "none of them has a safe fix" in fixable.stderr
    unsafe = _cli("--fix", "--unsafe-fixes", "--unfixable", "ALL", ".", cwd=tmp_path)
    assert "Found 1 error (0 fixed, 1 remaining): none of them has a fix." in unsafe.stderr


# ------------------------------------------------------------------ 8: output errors
full_disk = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")


@full_disk
@pytest.mark.parametrize("args", [["check", "--isolated", "--no-cache"],
                                  ["check", "--isolated", "--no-cache", "--diff"],
                                  ["check", "--isolated", "--no-cache", "--statistics"],
                                  ["rules"]])
def test_a_full_disk_under_stdout_is_an_output_error(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "bad.py").write_bytes(BAD)
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "torchlint", *args,
                                 *([str(tmp_path)] if args[0] == "check" else [])],
                                stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                env=ENV, timeout=300)
    assert result.returncode == 2
    assert result.stderr.startswith(
        "torchlint: error: cannot write the output: No space left on device"), result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert "Exception ignored" not in result.stderr


# ------------------------------------------------------------------ 2, 3: signals
def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as handle:
        return [int(child) for child in handle.read().split()]


def _gone(pid: int) -> bool:
    """Has ``pid`` exited (a zombie of an exited parent is reaped by init)?"""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] in ("Z", "X")
    except OSError:
        return True


@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"),
                    reason="needs Linux's /proc to find the worker processes")
@pytest.mark.parametrize(("signal_name", "status", "said"), [
    ("SIGINT", 130, "torchlint: interrupted"), ("SIGTERM", 143, "torchlint: terminated")])
def test_a_signal_stops_a_fix_run_and_its_workers(tmp_path: Path, signal_name: str,
                                                  status: int, said: str) -> None:
    import signal
    import time

    body = b"import torch\n" + b"".join(
        b"x%d = torch.autograd.Variable(torch.ones(%d))\n" % (i, i) for i in range(150))
    names = [f"m{n:03}.py" for n in range(200)]
    for name in names:
        (tmp_path / name).write_bytes(body)

    def fixed() -> set[str]:
        return {name for name in names if (tmp_path / name).read_bytes() != body}

    def default_signals() -> None:
        # a suite started in the background inherits an ignored SIGINT, which Python
        # then keeps: the run would rightly not stop on it
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    process = subprocess.Popen([sys.executable, "-m", "torchlint", "check", "--isolated",
                                "--no-cache", "--fix", "--jobs", "2", str(tmp_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=ROOT, env=ENV, start_new_session=True,
                               preexec_fn=default_signals)
    try:
        while not fixed() and process.poll() is None:  # the workers are writing fixes
            time.sleep(0.02)
        workers = _children(process.pid)
        process.send_signal(getattr(signal, signal_name))
        try:
            _, stderr = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # the workers too: they hold the pipes
            _, stderr = process.communicate()
        assert process.returncode == status, stderr
        assert said in stderr and "Traceback" not in stderr and "Aborted" not in stderr
        assert len(workers) == 2
        at_exit = {name: (tmp_path / name).read_bytes() for name in names}
        for _ in range(600):  # the workers go promptly; then nothing may change any more
            if all(_gone(worker) for worker in workers):
                break
            time.sleep(0.1)
        assert all(_gone(worker) for worker in workers)
        assert {name: (tmp_path / name).read_bytes() for name in names} == at_exit
        assert len(fixed()) < len(names)  # the queued work was cancelled
        assert sorted(os.listdir(tmp_path)) == names  # no temporary file left
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # whatever is left of a failed run
        except ProcessLookupError:
            pass
        process.communicate()


# ------------------------------------------------------------------ the preview hint
class LegacyName(Rule):
    """## What it does
    Flags the name `legacy`, in a shape that only preview mode reports."""
    code, name, message, triggers = "TL998", "legacy-name", "legacy", ("legacy",)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == "legacy":
            self.report(node, preview=True)


class _Shapes:
    """Settings whose one rule reports each ``legacy`` as a preview shape (a module level
    class: worker processes receive it)."""

    settings = FileSettings.for_rules([LegacyName])

    def for_file(self, path: str) -> FileSettings:
        return self.settings


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_preview_count_goes_through_the_runner_and_the_cache(tmp_path: Path, jobs: int
                                                                 ) -> None:
    paths = []
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text("legacy\n" * (i + 1))
        paths.append(str(tmp_path / f"m{i}.py"))
    settings = _Shapes()
    first = list(run(paths, settings, Mode(), jobs=jobs, cache_dir=tmp_path / "cache"))
    again = list(run(paths, settings, Mode(), jobs=jobs, cache_dir=tmp_path / "cache"))
    assert [o.preview_only for o in first] == [1, 2, 3, 4, 5]
    assert not any(o.cached for o in first) and all(o.cached for o in again)
    assert [o.preview_only for o in again] == [1, 2, 3, 4, 5]
    assert all(o.diagnostics == [] for o in first + again)


def test_preview_rules_are_counted_not_reported_when_preview_is_off() -> None:
    from torchlint.engine.lint import lint_source
    from torchlint.source import SourceFile

    # (a file parsed for a default rule: preview shapes alone get no file parsed)
    source = SourceFile("dp.py", "import torch\n\nmodel = torch.nn.DataParallel(net)\n"
                        "x = torch.FloatTensor(3)\n")
    quiet = lint_source(source, Settings().for_file("dp.py"))
    assert [d.code for d in quiet.diagnostics] == ["TL705"] and quiet.preview_only == 1
    loud = lint_source(source, Settings(preview=True).for_file("dp.py"))
    assert [d.code for d in loud.diagnostics] == ["TL801", "TL705"] and loud.preview_only == 0
    ignored = lint_source(source, Settings(ignore=("TL801",)).for_file("dp.py"))
    assert [d.code for d in ignored.diagnostics] == ["TL705"] and ignored.preview_only == 0


def test_the_summary_says_how_many_more_findings_preview_would_show(tmp_path: Path) -> None:
    # (counted where a default rule has the file parsed: TL705 here)
    (tmp_path / "dp.py").write_text("import torch\n\nmodel = torch.nn.DataParallel(net)\n"
                                    "other = torch.nn.DataParallel(net)\n"
                                    "x = torch.FloatTensor(3)\n")
    (tmp_path / "bad.py").write_bytes(BAD)
    hint = "2 more findings with --preview (rules and shapes not yet in the default tier)."
    plain = _cli(".", cwd=tmp_path)
    assert hint in plain.stderr and "TL801" not in plain.stdout
    assert "Found 2 errors." in plain.stderr
    cache = ["--cache-dir", str(tmp_path / "cache")]
    for _ in range(2):  # computed, then answered from the cache: the same count
        cached = subprocess.run([sys.executable, "-m", "torchlint", "check", "--isolated",
                                 *cache, "-v", str(tmp_path)], capture_output=True, text=True,
                                cwd=ROOT, env=ENV, timeout=300)
        assert hint in cached.stderr
    assert "2 answered from the cache" in cached.stderr
    preview = _cli("--preview", ".", cwd=tmp_path)
    assert "--preview (rules" not in preview.stderr and preview.stdout.count("TL801") == 2
    assert "--preview (rules" not in _cli("--select", "TL7", ".", cwd=tmp_path).stderr
    assert "--preview (rules" not in _cli("-q", ".", cwd=tmp_path).stderr
    machine = _cli("--output-format", "json", ".", cwd=tmp_path)
    assert "preview" not in machine.stdout and hint in machine.stderr
