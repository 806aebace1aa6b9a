"""torchlint.analysis.execution: which code trains, and which runs repeatedly."""

from __future__ import annotations

import textwrap

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.execution import (
    file_trains,
    function_runs_repeatedly,
    in_training_code,
    is_optimizer_step,
    runs_repeatedly,
    training_functions,
)
from torchlint.analysis.nodes import iter_nodes


def _context(source: str) -> FileContext:
    return FileContext("example.py", cst.parse_module(textwrap.dedent(source)))


def _functions(ctx: FileContext) -> dict[str, cst.FunctionDef]:
    return {n.name.value: n for n in ctx.definitions() if isinstance(n, cst.FunctionDef)}


def _at(ctx: FileContext, marker: str) -> list[cst.CSTNode]:
    """The walk stack down to the call of ``marker(...)``."""
    def path(node: cst.CSTNode, stack: list[cst.CSTNode]) -> list[cst.CSTNode] | None:
        stack = [*stack, node]
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and (
                node.func.value == marker):
            return stack
        for child in node.children:
            found = path(child, stack)
            if found is not None:
                return found
        return None

    found = path(ctx.module, [])
    assert found is not None, marker
    return found


SCRIPT = """
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self._build()
        here_init()

    def _build(self):
        here_build()
        for layer in range(3):
            here_build_loop()

    def forward(self, x):
        return self.head(x)

    def head(self, x):
        return here_head(x)


def helper():
    return here_helper()


def train(model, loader, optimizer):
    for x in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
        helper()


def report():
    return here_report()


def main():
    here_main()
    for epoch in range(3):
        train(None, [], None)
        here_epoch([here_comprehension() for _ in range(2)])
    report()


class Pipeline:
    def __call__(self, prompt):
        return self.encode_prompt(prompt)

    def encode_prompt(self, prompt):
        return self.zero_embed()

    def zero_embed(self):
        return here_zero_embed()


if __name__ == "__main__":
    here_script()
    main()
"""


def test_training_facts() -> None:
    ctx = _context(SCRIPT)
    assert file_trains(ctx)
    # train steps the optimizer; main reaches it through train
    assert training_functions(ctx) == {"train", "main"}
    assert not file_trains(_context("import torch\n\ndef predict(model, x):\n    return model(x)\n"))
    assert not file_trains(_context("import torch\nscheduler.step()\n"))
    steps = [n for n in iter_nodes(cst.parse_module(
        "optimizer.step()\nscaler.step(opt_g)\nself.optimizers[0].step()\nenv.step(a)\n"))
        if isinstance(n, cst.Call)]
    assert [is_optimizer_step(n) for n in steps] == [True, True, True, False]


def test_which_functions_run_repeatedly() -> None:
    ctx = _context(SCRIPT)
    functions = _functions(ctx)
    repeated = {name for name, node in functions.items()
                if function_runs_repeatedly(ctx, node)}
    # forward and the methods it calls; a function called from a loop and what it calls;
    # a pipeline's __call__, encode_* and their helpers. Not: the constructor and what only
    # it calls, main (called once), report (called once, after the loop)
    assert repeated == {"forward", "head", "train", "helper", "__call__", "encode_prompt",
                        "zero_embed"}


def test_runs_repeatedly_at_a_node() -> None:
    ctx = _context(SCRIPT)
    expected = {"here_init": False, "here_build": False, "here_build_loop": False,
                "here_head": True,
                "here_helper": True, "here_report": False, "here_main": False,
                "here_epoch": True, "here_comprehension": True, "here_zero_embed": True,
                "here_script": False}
    found = {}
    for marker in expected:
        ctx.ancestors = _at(ctx, marker)
        found[marker] = runs_repeatedly(ctx)
    assert found == expected


def test_in_training_code() -> None:
    ctx = _context(SCRIPT + """
for batch in []:
    here_loop()
    loss.backward()

for epoch in []:
    here_epochs()
    train(None, [], None)

for x in []:
    here_eval()
""")
    expected = {"here_helper": False, "here_main": True, "here_loop": True,
                "here_epochs": True, "here_eval": False, "here_script": False}
    found = {}
    for marker in expected:
        ctx.ancestors = _at(ctx, marker)
        found[marker] = in_training_code(ctx)
    assert found == expected


def test_a_method_called_on_a_global_instance_runs_as_often_as_its_caller() -> None:
    ctx = _context("""
        import torch

        class RNN(torch.nn.Module):
            def init_hidden(self):
                return torch.zeros(1, 1, 4)

            def init_weights(self):
                return None

        def train(line):
            hidden = decoder.init_hidden()
            return hidden

        def evaluate(decoder):
            return decoder.init_weights()  # a parameter, not the global

        decoder = RNN()
        for line in open("data.txt"):
            train(line)
            evaluate(decoder)
    """)
    functions = _functions(ctx)
    assert function_runs_repeatedly(ctx, functions["train"])
    assert function_runs_repeatedly(ctx, functions["init_hidden"])
    assert not function_runs_repeatedly(ctx, functions["init_weights"])
