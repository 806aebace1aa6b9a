"""The screening checks of the training-step rules (rules/training/step_screens.py).

Each case is a snippet and whether the rule's check must hold on it. Every snippet is also
linted by the rule alone with its prefilter off: a snippet the check must hold on is one
the rule flags, and one it must rule out is one the rule leaves alone (a check that ruled
out a file the rule flags would hide a finding)."""

from __future__ import annotations

import textwrap

import pytest

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.engine.triage import triage
from torchlint.registry import all_rules
from torchlint.rules.training import step_screens
from torchlint.source import SourceFile


def _reports(code: str, text: str) -> bool:
    rule = all_rules()[code]
    bare = type(rule.__name__, (rule,), {"triggers": (), "patterns": (), "requires": None})
    result = lint_source(SourceFile("t.py", text), FileSettings.for_rules([bare], {code}))
    return any(d.code == code for d in result.diagnostics)


def _holds(code: str, text: str) -> bool:
    facts = triage(text)
    assert facts is not None
    check = getattr(step_screens, f"may_flag_{code.lower()}")
    return bool(check(facts, Options()))


CASES: list[tuple[str, bool, str]] = [
    # ---------------------------------------------------------------- TL205
    ("TL205", True, """
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                model(x).sum().backward()
                optimizer.step()
        """),
    ("TL205", True, """
        import torch
        def train(model, loader, scaler, opt_g):
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.step(opt_g)
        """),
    # a step function handed to a trainer, cleared nowhere on its path
    ("TL205", True, """
        from ignite.engine import Engine
        def update(eng, batch, model=None, optimizer=None):
            loss = model(batch)
            loss.backward()
            optimizer.step()
        trainer = Engine(update)
        """),
    ("TL205", True, """
        import lightning
        class Module(lightning.LightningModule):
            def training_step(self, batch, i):
                opt = self.optimizers()
                self.manual_backward(self(batch))
                opt.step()
        """),
    # a notebook's program: the loop at module level
    ("TL205", True, """
        import torch
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in loader:
            model(x).mean().backward()
            optimizer.step()
        """),
    # cleared in the loop, directly or through a helper of the file
    ("TL205", False, """
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                optimizer.zero_grad()
                model(x).sum().backward()
                optimizer.step()
        """),
    ("TL205", False, """
        import torch
        def reset(model):
            for p in model.parameters():
                p.grad = None
        def train(model, loader, optimizer):
            for x, y in loader:
                reset(model)
                model(x).sum().backward()
                optimizer.step()
        """),
    # distributed autograd keeps gradients per context
    ("TL205", False, """
        import torch.distributed.autograd as dist_autograd
        def train(model, loader, opt):
            for x in loader:
                with dist_autograd.context() as cid:
                    dist_autograd.backward(cid, [model(x)])
                    opt.step(cid)
        """),
    # a step function cleared by the function around it (timm's nested _backward)
    ("TL205", False, """
        import torch
        def train_one_epoch(model, loader, optimizer):
            for x in loader:
                def _backward(loss):
                    loss.backward()
                    optimizer.step()
                optimizer.zero_grad()
                _backward(model(x))
        """),
    # a step function cleared by another method of its class
    ("TL205", False, """
        import lightning
        class Module(lightning.LightningModule):
            def training_step(self, batch, i):
                opt = self.optimizers()
                self.manual_backward(self(batch))
                opt.step()
            def on_train_batch_end(self, *args):
                self.optimizers().zero_grad()
        """),
    # a step function called once, from nowhere repeated
    ("TL205", False, """
        import torch
        def fit_once(model, x, optimizer):
            model(x).backward()
            optimizer.step()
        """),
    # the module-level code that calls it clears the gradients
    ("TL205", False, """
        import torch
        def train_step(model, x, optimizer):
            model(x).backward()
            optimizer.step()
        for x in loader:
            optimizer.zero_grad()
            train_step(model, x, optimizer)
        """),
    # ---------------------------------------------------------------- TL218
    ("TL218", True, """
        import torch
        def fit(net, batches, criterion, opt):
            for inputs, targets in batches:
                criterion(net(inputs), targets).backward()
                opt.zero_grad()
                opt.step()
        """),
    # the model the optimizer was built over, the step read in a with block
    ("TL218", True, """
        import torch
        class Trainer:
            def __init__(self, net):
                self.net = net
                self.optimizer = torch.optim.Adam(self.net.parameters())
            def step(self, loss):
                loss.backward()
                self.net.zero_grad()
                with torch.no_grad():
                    self.optimizer.step()
        """),
    ("TL218", True, """
        from torch.autograd import backward
        import torch
        def fit(loss, scaler, opt):
            backward(loss)
            opt.zero_grad()
            scaler.step(opt)
        """),
    ("TL218", False, """
        import torch
        def fit(net, batches, criterion, opt):
            for inputs, targets in batches:
                opt.zero_grad()
                criterion(net(inputs), targets).backward()
                opt.step()
        """),
    # another model's gradients, and a backward before the step
    ("TL218", False, """
        import torch
        def fit(gen, disc, x, opt_g, opt_d):
            disc(x).backward()
            gen.zero_grad()
            opt_d.step()
            gen(x).backward()
            opt_g.zero_grad()
            gen(x).backward()
            opt_g.step()
        """),
    # the zero_grad under a condition is no straight-line code
    ("TL218", False, """
        import torch
        def fit(loss, opt, accumulate):
            loss.backward()
            if accumulate:
                opt.zero_grad()
            opt.step()
        """),
    # ---------------------------------------------------------------- TL219
    ("TL219", True, """
        import torch
        def train(model, loader, epochs):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10)
            for epoch in range(epochs):
                scheduler.step()
                for x in loader:
                    model(x).backward()
                    optimizer.step()
        """),
    ("TL219", True, """
        from torch.optim import lr_scheduler
        class Trainer:
            def setup(self, opt):
                self.sched = lr_scheduler.CosineAnnealingLR(optimizer=self.opt, T_max=5)
            def fit(self, loader):
                while True:
                    with self.timer():
                        self.sched.step()
                    self.opt.step()
        """),
    # stepped after the optimizer, or a scheduler stepped on a metric
    ("TL219", False, """
        import torch
        def train(model, loader, epochs):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10)
            for epoch in range(epochs):
                for x in loader:
                    model(x).backward()
                    optimizer.step()
                scheduler.step()
        """),
    ("TL219", False, """
        import torch
        def train(model, loader, epochs, optimizer):
            scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
            for epoch in range(epochs):
                scheduler.step()
                optimizer.step()
        """),
    # a scheduler of another library
    ("TL219", False, """
        import torch
        from timm.scheduler import CosineLRScheduler
        def train(model, epochs, optimizer):
            scheduler = CosineLRScheduler(optimizer)
            for epoch in range(epochs):
                scheduler.step()
                optimizer.step()
        """),
    # ---------------------------------------------------------------- TL221
    ("TL221", True, """
        import torch
        def train(model, loader, opt):
            for x in loader:
                torch.manual_seed(0)
                model(x).backward()
                opt.step()
        """),
    ("TL221", True, """
        from torch import manual_seed as seed_all
        SEED = 3
        for epoch in range(10):
            for x in loader:
                seed_all(seed=int(SEED))
            loss.backward()
        """),
    ("TL221", False, """
        import torch
        def train(model, loader, opt):
            torch.manual_seed(0)
            for x in loader:
                model(x).backward()
                opt.step()
        """),
    # a seed that varies per iteration, and a loop that does not train
    ("TL221", False, """
        import random
        import torch
        def train(model, loader, opt):
            for step, x in enumerate(loader):
                torch.manual_seed(step)
                torch.cuda.manual_seed(random.randint(0, 9))
                model(x).backward()
        def sample(n):
            for i in range(n):
                torch.manual_seed(0)
        """),
    # the backward is in a function of its own, not the loop's body
    ("TL221", False, """
        import torch
        for x in loader:
            torch.manual_seed(0)
            def closure():
                model(x).backward()
        """),
    # ---------------------------------------------------------------- TL222
    ("TL222", True, """
        import torch
        with torch.autocast(dtype=torch.bfloat16):
            pass
        """),
    ("TL222", True, """
        from torch.amp import autocast as ac
        with ac():
            pass
        """),
    ("TL222", False, """
        import torch
        with torch.autocast("cuda"), torch.autocast(device_type="cpu"):
            pass
        with torch.cuda.amp.autocast():
            pass
        """),
    ("TL222", False, """
        import torch
        def f(**kw):
            with torch.autocast(**kw):
                pass
        """),
    # ---------------------------------------------------------------- TL204
    ("TL204", True, """
        import torch
        with torch.autocast("cuda"):
            loss = model(x)
            loss.backward()
        """),
    # a name or a factory bound to autocast
    ("TL204", True, """
        import functools
        import torch
        amp = functools.partial(torch.autocast, device_type="cuda")
        def step(model, x):
            with amp():
                model(x).backward()
        """),
    ("TL204", True, """
        import torch
        def step(model, x, on):
            ctx = torch.autocast("cuda") if on else torch.autocast("cpu", enabled=False)
            with ctx:
                model(x).backward()
        """),
    ("TL204", False, """
        import torch
        with torch.autocast("cuda"):
            loss = model(x)
        loss.backward()
        """),
    # timm's amp_autocast parameter, a disabled autocast, a nested function's backward
    ("TL204", False, """
        import torch
        def step(model, x, amp_autocast):
            with amp_autocast():
                model(x).backward()
            with torch.autocast("cuda", enabled=False):
                model(x).backward()
            with torch.autocast("cuda"):
                def later():
                    model(x).backward()
        """),
    # ---------------------------------------------------------------- TL203
    ("TL203", True, """
        import torch
        def evaluate(model, x):
            torch.no_grad()
            return model(x)
        """),
    ("TL203", True, """
        from torch.autograd import grad_mode
        grad_mode.inference_mode()
        """),
    ("TL203", False, """
        import torch
        @torch.no_grad()
        def evaluate(model, x):
            with torch.inference_mode():
                return model(x)
        ctx = torch.enable_grad()
        """),
    # ---------------------------------------------------------------- TL213
    ("TL213", True, """
        import torch
        with torch.no_grad:
            pass
        """),
    ("TL213", True, """
        from torch import enable_grad, inference_mode
        def f(train):
            with enable_grad if train else inference_mode():
                pass
        """),
    ("TL213", False, """
        import torch
        with torch.no_grad():
            pass
        no_grad = torch.no_grad
        """),
    # ---------------------------------------------------------------- TL209
    ("TL209", True, """
        import torch
        for x in loader:
            try:
                torch.cuda.empty_cache()
            finally:
                model(x).backward()
        """),
    # a break in a body on the header's line does not count, as for the rule
    ("TL209", True, """
        import torch
        for x in train_loader: torch.cuda.empty_cache(); break
        """),
    ("TL209", False, """
        import torch
        for x in loader:
            model(x).backward()
            if x.item() % 100 == 0:
                torch.cuda.empty_cache()
        for x in loader:
            model(x).backward()
            torch.cuda.empty_cache()
            break
        for x in loader:
            try:
                model(x).backward()
            except RuntimeError:
                torch.cuda.empty_cache()
        for x in loader:
            try:
                model(x).backward()
            finally:
                torch.cuda.empty_cache()
        """),
    # ---------------------------------------------------------------- TL220
    ("TL220", True, """
        import torch
        for x in loader:
            loss = model(x)
            scaler.scale(loss.mean()).backward(retain_graph=True)
        """),
    ("TL220", False, """
        import torch
        for x in loader:
            loss = model(x)
            loss.backward(retain_graph=True)
            other(x).backward()
        for x in loader:
            self.loss.backward(retain_graph=True)
        """),
    # ---------------------------------------------------------------- TL223
    ("TL223", True, """
        import torch
        def train(model, loader, opt):
            scaler = torch.cuda.amp.GradScaler()
            for x in loader:
                scaler.scale(model(x)).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(opt)
                scaler.update()
        """),
    ("TL223", False, """
        import torch
        def train(model, loader, opt):
            scaler = torch.cuda.amp.GradScaler()
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(opt)
                scaler.update()
        """),
    # the clip, the scaled backward and the step in different functions
    ("TL223", False, """
        import torch
        def backward(scaler, loss):
            scaler.scale(loss).backward()
        def clip(model):
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        def step(scaler, opt):
            scaler.step(opt)
        """),
    # ---------------------------------------------------------------- TL224
    ("TL224", True, """
        import torch
        def finetune(model):
            for p in model.parameters():
                p.requires_grad = False
            return torch.optim.SGD(model.head.parameters(), lr=0.01)
        """),
    ("TL224", True, """
        from torch import optim
        def finetune(model):
            model.requires_grad_(requires_grad=False)
            return optim.AdamW(params=model.parameters())
        """),
    # a submodule frozen, or the freezing in another function
    ("TL224", False, """
        import torch
        def finetune(model):
            for p in model.backbone.parameters():
                p.requires_grad = False
            return torch.optim.SGD(model.parameters(), lr=0.01)
        def freeze(model):
            model.requires_grad_(False)
        def build(model):
            return torch.optim.SGD(model.parameters(), lr=0.01)
        """),
]


@pytest.mark.parametrize(("code", "expected", "source"), CASES)
def test_check_holds_exactly_where_the_rule_can_report(code: str, expected: bool,
                                                        source: str) -> None:
    text = textwrap.dedent(source)
    assert _reports(code, text) == expected, "the case does not show what it says"
    assert _holds(code, text) == expected


def test_every_rule_of_the_module_is_tested() -> None:
    checked = {name[len("may_flag_"):].upper() for name in dir(step_screens)
               if name.startswith("may_flag_")}
    assert checked == {code for code, _, _ in CASES}


def test_the_torch_names_are_the_rules_own() -> None:
    """The names are repeated in the check module (which may not import libcst): they must
    stay those the rules read."""
    from torchlint.analysis import torch_facts, training_objects
    from torchlint.rules.training import (
        steps,
        tl203_grad_mode_not_entered,
        tl209_empty_cache_in_loop,
        tl221_manual_seed_in_training_loop,
        tl222_autocast_without_device_type,
    )

    assert step_screens.GRAD_MODES == tl203_grad_mode_not_entered._GRAD_MODES
    assert step_screens.GRAD_MODE_CLASSES == steps.GRAD_MODE_CLASSES
    assert step_screens.AUTOCAST_NAMES == torch_facts.AUTOCAST_NAMES
    assert step_screens.NEUTRAL_AUTOCAST == tl222_autocast_without_device_type.NEUTRAL_AUTOCAST
    assert step_screens.SEEDING == tl221_manual_seed_in_training_loop._SEEDING
    assert step_screens.EMPTY_CACHE == tl209_empty_cache_in_loop._EMPTY_CACHE
    assert step_screens.GRADIENT_CLIPS == training_objects.GRADIENT_CLIPS
    assert step_screens.BACKWARD_METHODS == torch_facts.BACKWARD_METHODS
    assert step_screens.METRIC_SCHEDULERS == steps._METRIC_SCHEDULERS
    assert step_screens.SCHEDULER_PREFIX == steps._SCHEDULER_PREFIX
    assert {f"builtins.{name}" for name in step_screens.PURE_BUILTINS} == (
        tl221_manual_seed_in_training_loop._PURE_BUILTINS)


def test_a_check_reads_a_file_once_for_its_memo() -> None:
    """The per-file memo follows the tree: a second file gets its own."""
    first = triage("import torch\nfor x in a:\n    x.backward()\n    opt.step()\n")
    second = triage("import torch\nfor x in a:\n    opt.zero_grad()\n    x.backward()\n"
                    "    opt.step()\n")
    assert first is not None and second is not None
    assert step_screens.may_flag_tl205(first, Options())
    assert not step_screens.may_flag_tl205(second, Options())
    assert step_screens.may_flag_tl205(first, Options())


@pytest.mark.parametrize(("second_cell", "expected"), [
    ("for x, y in loader:\n    loss = loss_fn(model(x), y)\n    loss.backward()\n"
     "    optimizer.step()\n", True),
    ("for x, y in loader:\n    optimizer.zero_grad()\n    loss_fn(model(x), y).backward()\n"
     "    optimizer.step()\n", False),
])
def test_a_notebooks_program_is_screened_as_one_module(second_cell: str,
                                                        expected: bool) -> None:
    """A notebook's training loop spread over cells, with IPython syntax among them."""
    from torchlint.notebook import Notebook

    notebook = Notebook.from_cells("n.ipynb", [
        (1, "%matplotlib inline\nimport torch\n!nvidia-smi\n"
            "optimizer = torch.optim.Adam(model.parameters())\n"),
        (2, "%%time\n" + second_cell),
    ])
    assert _reports("TL205", notebook.program) == expected
    assert _holds("TL205", notebook.program) == expected


def test_a_check_holds_on_what_is_too_deep_for_it() -> None:
    """An expression nested past the recursion limit of ``ast.unparse`` (though not of the
    triage's walk): the check cannot tell, so the rule may run."""
    text = ("import torch\ndef f(opt, loss):\n    loss.backward()\n    ("
            + "+".join(["a"] * 600) + ").zero_grad()\n    opt.step()\n")
    assert _holds("TL218", text)
