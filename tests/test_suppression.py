"""# noqa through torchlint check as through flake8: prefixes, multi-line statements, and
TL002 on stale, unknown and blanket directives, line and file level, with its fix."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from click.testing import CliRunner

from torchlint.cli import main


def check(tmp_path: Path, text: str, *args: str):
    (tmp_path / "a.py").write_text(textwrap.dedent(text))
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        return CliRunner().invoke(main, ["check", "--no-cache", "--isolated", *args, "a.py"],
                                  catch_exceptions=False)
    finally:
        os.chdir(old)


def codes(result) -> list[tuple[int, str]]:
    return [(int(line.split(":")[1]), line.split(": ", 1)[1].split()[0])
            for line in result.stdout.splitlines()]


def test_a_prefix_suppresses_its_family(tmp_path: Path) -> None:
    result = check(tmp_path, """\
        import torch
        a = torch.autograd.Variable(torch.ones(3))  # noqa: TL7
        b = torch.autograd.Variable(torch.ones(3))  # noqa: TL70
        c = torch.autograd.Variable(torch.ones(3))  # noqa: TL6
        d = torch.load("x.pt")  # noqa: tl6
    """)
    assert codes(result) == [(4, "TL704")]


def test_a_directive_at_the_end_of_a_multi_line_string_covers_it(tmp_path: Path) -> None:
    result = check(tmp_path, '''\
        import torch
        doc = torch.tensor(
            """not a tensor""").cuda(), torch.load("""x
        .pt""")  # noqa: TL6
        total = torch.load("y.pt") + \\
            1  # noqa: TL601
        more = torch.load("z.pt") + \\
            1
    ''', "--preview", "--select", "TL6")
    # line 5 cannot hold a comment: the directive ending the continuation covers it
    assert codes(result) == [(5, "TL602"), (7, "TL601"), (7, "TL602")]


def test_unused_and_unknown_codes_of_the_file_directive(tmp_path: Path) -> None:
    text = """\
        # torchlint: noqa: TL704, TL401, TL999
        import torch
        x = torch.autograd.Variable(torch.ones(3))
    """
    result = check(tmp_path, text, "--extend-select", "TL002")
    assert result.stdout.splitlines() == [  # no [*]: removing an unknown code is unsafe
        "a.py:1:1: TL002 unused noqa directive: TL401 is not reported in this file; "
        "TL999 is not a torchlint code"]
    fixed = check(tmp_path, text, "--extend-select", "TL002", "--fix", "--unsafe-fixes")
    assert fixed.exit_code == 0, fixed.output
    assert (tmp_path / "a.py").read_text().startswith("# torchlint: noqa: TL704\n")


def test_tl002_fix_removes_stale_codes_and_keeps_the_words(tmp_path: Path) -> None:
    text = """\
        import torch
        x = torch.zeros(3, device="cuda")  # noqa: TL301, E501  # why it was here
        y = torch.zeros(3, device="cuda")  # noqa: TL301 legacy loader
        # noqa: TL301
        z = 1  # noqa
    """
    quiet = check(tmp_path, text, "--extend-select", "TL002")
    assert (5, "TL002") not in codes(quiet)  # a blanket noqa is judged in preview only
    result = check(tmp_path, text, "--extend-select", "TL002", "--preview", "--fix")
    assert result.exit_code == 1  # the blanket noqa's removal is unsafe: it remains
    assert (tmp_path / "a.py").read_text() == textwrap.dedent("""\
        import torch
        x = torch.zeros(3, device="cuda")  # noqa: E501  # why it was here
        y = torch.zeros(3, device="cuda")  # legacy loader
        z = 1  # noqa
    """)
    assert codes(result) == [(4, "TL002")]
    check(tmp_path, (tmp_path / "a.py").read_text(), "--extend-select", "TL002", "--preview",
          "--fix", "--unsafe-fixes")
    assert (tmp_path / "a.py").read_text().endswith("z = 1\n")
