"""The screen's checks of TL401 (tests left alone), TL801 (its preview shapes too, which a
run without preview counts) and TL903 (the generator the rule reports, made in ``__init__``
or at module level): each holds where its rule reports and rules out the clean shapes real
code showed. Every case asserts both the check and the rule, forced to run."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import replace

import pytest

from torchlint.analysis.options import Options
from torchlint.analysis.test_paths import is_test_file
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.engine.triage import FileFacts, triage
from torchlint.registry import all_rules
from torchlint.rules.data.screens import may_flag_tl903
from torchlint.rules.evaluation.screens import may_flag_tl401
from torchlint.rules.parallel.screens import may_flag_tl801
from torchlint.source import SourceFile

CHECKS: dict[str, Callable[[FileFacts, Options], bool]] = {
    "TL401": may_flag_tl401, "TL801": may_flag_tl801, "TL903": may_flag_tl903}


def _judge(code: str, text: str, path: str = "script.py", *, preview: bool = False,
           known_path: bool = True) -> tuple[bool, bool]:
    """(the check holds, the rule reports) for ``text`` at ``path``: the facts know
    whether the path is a test's, as the screen's do (``known_path=False``: the facts of a
    text alone)."""
    text = textwrap.dedent(text)
    facts = triage(text)
    assert facts is not None
    if known_path:
        facts = replace(facts, test_file=is_test_file(path, None))
    options = Options(preview=preview)
    settings = replace(FileSettings.for_rules([all_rules()[code]], frozenset({code})),
                       options=options)
    reported = any(d.code == code for d in lint_source(
        SourceFile(path, text), settings, prefilter=False).diagnostics)
    return CHECKS[code](facts, options), reported


# ------------------------------------------------------------------ TL401
TL401_TEST = """
    import torch

    def test_forward(model, x):
        model.eval()
        return model(x)
    """
TL401_NESTED = """
    import torch

    def test_callback(model, batch):
        class Check:
            def on_validation_start(self, trainer, model):
                model.eval()
                model(batch)

        return Check()
    """
TL401_TEST_CLASS = """
    import torch

    class TestPooling:
        def run_inference(self, model, x):
            model.eval()
            return model(x)
    """
TL401_HELPER = """
    import torch

    def evaluate(model, loader):
        model.eval()
        for x, y in loader:
            model(x)
    """


@pytest.mark.parametrize("text", [TL401_TEST, TL401_NESTED, TL401_TEST_CLASS])
def test_tl401_rules_out_tests_in_test_files(text: str) -> None:
    assert _judge("TL401", text, "tests/test_models.py") == (False, False)
    # the same code outside tests is evaluation code
    assert _judge("TL401", text, "evaluation.py") == (True, True)


@pytest.mark.parametrize("text", [TL401_TEST, TL401_NESTED])
def test_tl401_holds_where_the_path_is_unknown(text: str) -> None:
    assert _judge("TL401", text, "tests/test_models.py", known_path=False)[0]


def test_tl401_holds_on_an_evaluation_helper_of_a_test_file() -> None:
    assert _judge("TL401", TL401_HELPER, "tests/test_models.py") == (True, True)
    helper_after_test = TL401_TEST + textwrap.indent(textwrap.dedent(TL401_HELPER), "    ")
    assert _judge("TL401", helper_after_test, "tests/test_models.py") == (True, True)


# ------------------------------------------------------------------ TL801
TL801_INFERENCE = """
    import torch

    model = torch.nn.DataParallel(create_model()).cuda().eval()
    with torch.no_grad():
        for x in loader:
            print(model(x))
    """


def test_tl801_rules_out_a_file_with_only_preview_shapes_when_preview_is_off() -> None:
    # a run without preview counts preview shapes for its hint where it parses the file
    # anyway (and a noqa comment has the file parsed): the check need not hold for them
    assert _judge("TL801", TL801_INFERENCE, preview=True) == (True, True)
    assert _judge("TL801", TL801_INFERENCE) == (False, False)
    settings = FileSettings.for_rules([all_rules()["TL801"]], frozenset({"TL801"}))
    alone = lint_source(SourceFile("infer.py", textwrap.dedent(TL801_INFERENCE)), settings)
    assert alone.diagnostics == [] and alone.preview_only == 0
    noted = textwrap.dedent(TL801_INFERENCE).replace(".eval()", ".eval()  # noqa: TL801")
    both = FileSettings.for_rules([all_rules()["TL801"], all_rules()["TL002"]],
                                  frozenset({"TL801", "TL002"}))
    counted = lint_source(SourceFile("infer.py", noted), both)
    assert counted.diagnostics == [] and counted.preview_only == 1


# ------------------------------------------------------------------ TL903
TL903_FIRES = [
    # drawn in a method __getitem__ calls, made through a conditional
    """
    import numpy as np
    from torch.utils.data import DataLoader, Dataset

    class Noisy(Dataset):
        def __init__(self, seed=None):
            self.rng = np.random.default_rng(seed) if seed else np.random.default_rng()

        def _noise(self):
            return self.rng.normal()

        def __getitem__(self, i):
            return self._noise()

    loader = DataLoader(Noisy(), num_workers=4)
    """,
    # a module-level generator, another module's name for it
    """
    from random import Random
    from torch.utils.data import DataLoader, IterableDataset

    RNG = Random(0)

    class Stream(IterableDataset):
        def __iter__(self):
            yield RNG.random()

    loader = DataLoader(Stream(), num_workers=2)
    """,
]
TL903_FIRES += [
    # a dataset through a class of the file
    """
    import random
    import torch.utils.data as data

    class Base(data.Dataset):
        pass

    class Flips(Base):
        def __init__(self):
            self.rng = random.Random(0)

        def __getitem__(self, i):
            return self.rng.random() < 0.5

    loader = data.DataLoader(Flips(), num_workers=2)
    """,
]
TL903_CLEAN = [
    # a batch sampler is no dataset: it runs in the main process (diffusers' bucket sampler)
    """
    import random
    from torch.utils.data import BatchSampler, DataLoader

    class Buckets(BatchSampler):
        def __init__(self, seed=None):
            self.generator = random.Random(seed) if seed is not None else random

        def __iter__(self):
            yield self.generator.sample(range(10), 4)

    loader = DataLoader(range(10), batch_sampler=Buckets(0), num_workers=2)
    """,
    """
    import random
    from torch import nn

    RNG = random.Random(0)

    class Noise(nn.Module):
        def __iter__(self):
            yield RNG.random()
    """,
    # reassigned per epoch in __iter__ (timm's ResampledShards2)
    """
    import random
    from torch.utils.data import IterableDataset

    class Shards(IterableDataset):
        def __init__(self, urls):
            self.urls = urls
            self.rng = random.Random()

        def __iter__(self):
            self.rng = random.Random(self.seed() + self.epoch)
            yield self.urls[self.rng.randint(0, len(self.urls) - 1)]
    """,
    # a local of a method (a split made once)
    """
    import random
    from torch.utils.data import DataLoader, Dataset

    class Kitti(Dataset):
        def __init__(self, items):
            chooser = random.Random(12345)
            self.items = chooser.sample(items, len(items) // 5)

        def __getitem__(self, i):
            return self.items[i]

    loader = DataLoader(Kitti(list(range(10))), num_workers=4)
    """,
    # reseeded by the class itself
    """
    import numpy as np
    from torch.utils.data import Dataset, get_worker_info

    class Noisy(Dataset):
        def __init__(self):
            self.rng = np.random.default_rng(0)

        def __getitem__(self, i):
            info = get_worker_info()
            return self.rng.normal()
    """,
    """
    import numpy as np
    from torch.utils.data import Dataset

    class Noisy(Dataset):
        def __init__(self):
            self.rng = np.random.RandomState(0)

        def worker_init(self, seed):
            self.rng.seed(seed)

        def __getitem__(self, i):
            return self.rng.normal()
    """,
    # made in a function nested in __init__, or drawn outside the sample methods
    """
    import numpy as np
    from torch.utils.data import Dataset

    class Noisy(Dataset):
        def __init__(self):
            def make():
                self.rng = np.random.default_rng(0)
            make()

        def __getitem__(self, i):
            return self.rng.normal()
    """,
    """
    import numpy as np
    from torch.utils.data import Dataset

    class Noisy(Dataset):
        def __init__(self):
            self.rng = np.random.default_rng(0)

        def shuffle(self):
            return self.rng.permutation(10)

        def __getitem__(self, i):
            return i
    """,
]


@pytest.mark.parametrize("text", TL903_FIRES)
def test_tl903_holds_on_generators_copied_to_workers(text: str) -> None:
    assert _judge("TL903", text) == (True, True)


@pytest.mark.parametrize("text", TL903_CLEAN)
def test_tl903_rules_out_generators_the_rule_leaves_alone(text: str) -> None:
    assert _judge("TL903", text) == (False, False)
