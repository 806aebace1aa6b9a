"""The size analysis (torchlint.analysis.sizes): layer sizes, chains, Unknown, spatial sizes."""

from __future__ import annotations

import textwrap

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.sizes import Unknown, size_facts


def facts(source: str):
    ctx = FileContext("example.py", cst.parse_module(textwrap.dedent(source)))
    return size_facts(ctx), ctx


def messages(source: str, kind: str | None = None) -> list[str]:
    found, _ = facts(source)
    return sorted(m.message for ms in found.by_node.values() for m in ms
                  if kind is None or m.kind == kind)


HEADER = "\n    import torch\n    import torch.nn as nn\n    import torch.nn.functional as F\n"


def test_sequential_linear_chain_names_both_layers_and_sizes():
    found = messages(HEADER + "    head = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(256, 10))\n")
    assert found == ["Linear(256 -> 10) receives 128 features from Linear(64 -> 128); "
                     "in_features=128 would make the chain consistent"]


def test_facts_are_computed_once_per_file():
    found, ctx = facts(HEADER + "    m = nn.Sequential(nn.Linear(2, 3))\n")
    assert size_facts(ctx) is found


def test_constants_arithmetic_and_defaults_used_by_a_construction():
    source = HEADER + """
    HIDDEN = 32
    class MLP(nn.Module):
        def __init__(self, width=HIDDEN * 2):
            super().__init__()
            self.fc1 = nn.Linear(8, width)
            self.fc2 = nn.Linear(HIDDEN, 10)
        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))
    model = MLP()
    """
    assert messages(source) == ["Linear(32 -> 10) receives 64 features from Linear(8 -> 64); "
                                "in_features=64 would make the chain consistent"]


def test_defaults_count_only_for_a_class_the_project_builds_with_them():
    source = HEADER + """
    class MLP(nn.Module):
        def __init__(self, width=64, depth=2):
            super().__init__()
            self.fc1 = nn.Linear(8, width)
            self.fc2 = nn.Linear(32, 10)
        def forward(self, x):
            return self.fc2(self.fc1(x))
    """
    # built nowhere: a library class, built by its users with sizes of their own
    assert messages(source) == []
    assert messages(source + "    model = MLP(depth=3)\n") == [
        "Linear(32 -> 10) receives 64 features from Linear(8 -> 64); "
        "in_features=64 would make the chain consistent"]


def test_a_class_named_elsewhere_in_the_file_has_unknown_parameters():
    for use in ("model = build(MLP, width=32)\n", "class Wide(MLP): pass\n",
                "model = MLP(width=WIDTH)\n"):
        source = HEADER + """
    class MLP(nn.Module):
        def __init__(self, width=64):
            super().__init__()
            self.fc1 = nn.Linear(8, width)
            self.fc2 = nn.Linear(32, 10)
        def forward(self, x):
            return self.fc2(self.fc1(x))
    """ + "    " + use
        assert messages(source) == [], use
        found, _ = facts(source)
        assert all(chain.checks == 0 for chain in found.chains), use


def test_two_constructions_give_two_checks():
    source = HEADER + """
    class Head(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.a = nn.Linear(8, width)
            self.b = nn.Linear(64, 2)
        def forward(self, x):
            return self.b(self.a(x))
    good = Head(64)
    bad = Head(32)
    unknown = Head(size)
    """
    found, _ = facts(source)
    assert len(found.chains) == 3
    assert [c.checks for c in found.chains] == [1, 1, 0]
    assert messages(source) == ["Linear(64 -> 2) receives 32 features from Linear(8 -> 32); "
                                "in_features=32 would make the chain consistent"]


def test_ordered_dict_add_module_list_and_helper_chains():
    source = HEADER + """
    from collections import OrderedDict
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Sequential(OrderedDict([("c", nn.Conv2d(3, 32, 3)), ("n", nn.BatchNorm2d(64))]))
            self.b = nn.Sequential()
            self.b.add_module("l", nn.Linear(4, 8))
            self.b.add_module("n", nn.LayerNorm(16))
            layers = [nn.Linear(1, 2)]
            layers.append(nn.Linear(3, 4))
            self.c = nn.Sequential(*layers)
            self.d = nn.Sequential(*self._block(5))
        def _block(self, n):
            return [nn.Linear(n, 6), nn.ReLU(), nn.Linear(7, 1)]
    """
    found = messages(source)
    assert [m.split(" receives")[0] for m in found] == [
        "BatchNorm2d(64)", "LayerNorm(16)", "Linear(3 -> 4)", "Linear(7 -> 1)"]


def test_unknown_stops_the_chain_and_branches_are_silent():
    source = HEADER + """
    class Net(nn.Module):
        def __init__(self, big):
            super().__init__()
            if big:
                self.fc1 = nn.Linear(8, 64)
            else:
                self.fc1 = nn.Linear(8, 32)
            self.fc2 = nn.Linear(64, 2)
            self.fc3 = nn.Linear(2, 5)
            self.fc4 = nn.Linear(9, 5)
        def forward(self, x):
            x = self.fc2(self.fc1(x))
            x = x.permute(1, 0)
            return self.fc4(self.fc3(x))
    net = Net(True)
    """
    found, _ = facts(source)
    (chain,) = found.chains
    stops = [s.stop for s in chain.steps if s.stop]
    assert stops[0] == "assigned in a branch or loop"
    assert any("reshape" in stop for stop in stops)
    assert messages(source) == ["Linear(9 -> 5) receives 5 features from Linear(2 -> 5); "
                                "in_features=5 would make the chain consistent"]


def test_channels_pass_through_pooling_and_rank_mismatch():
    source = HEADER + """
    a = nn.Sequential(nn.Conv2d(3, 16, 3), nn.MaxPool2d(2), nn.ReLU(), nn.BatchNorm2d(16))
    b = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm1d(16))
    c = nn.Sequential(nn.Linear(3, 16), nn.Conv2d(16, 4, 1))
    d = nn.Sequential(nn.Conv2d(3, 16, 3), nn.Linear(16, 4))
    """
    assert messages(source, "size") == []
    assert messages(source, "rank") == [
        "BatchNorm1d(16) expects 2D or 3D input, got 4D input from Conv2d(3 -> 16); "
        "BatchNorm2d takes 4D input",
        "Conv2d(16 -> 4) expects 3D or 4D input, got 2D input from Linear(3 -> 16); "
        "reshape the value first"]


def test_spatial_sizes_from_a_dummy_input():
    source = HEADER + """
    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 5)
            self.conv2 = nn.Conv2d(6, 16, 5, padding=1)
            self.fc = nn.Linear(16 * 5 * 5, 10)
        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = nn.functional.relu(self.conv2(x))
            return self.fc(torch.flatten(x, 1))
    net = LeNet()
    net(torch.randn(1, 3, 32, 32))
    """
    # 32 -> conv 28 -> pool 14 -> conv (padding 1) 12: 16 * 12 * 12 features
    assert messages(source) == ["Linear(400 -> 10) receives 2304 features from torch.flatten "
                                "of 16x12x12 (after Conv2d(6 -> 16)); in_features=2304 would "
                                "make the chain consistent"]
    # a module built inside forward is an unknown call: the spatial size is lost after it
    unknown = source.replace("return self.fc(", "x = nn.MaxPool2d(2)(x)\n        return self.fc(")
    assert messages(unknown) == []


def test_spatial_sizes_from_the_dataset_the_loader_uses():
    source = HEADER + """
    from torchvision import datasets, transforms
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
            self.fc = nn.Linear(8 * 15 * 15, 10)
        def forward(self, x):
            x = F.max_pool2d(self.conv(x), 2)
            return self.fc(x.view(x.size(0), -1))
    def main():
        tf = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.ToTensor()])
        data = datasets.CIFAR10("data", transform=tf)
        loader = torch.utils.data.DataLoader(data, batch_size=8)
        model = Net().to("cpu")
        for x, y in loader:
            model(x)
    """
    # CIFAR-10 crops of 32: 32 -> conv 30 -> pool 15, as declared
    found, _ = facts(source)
    (chain,) = found.chains
    assert chain.checks == 3 and not chain.mismatches
    assert messages(source.replace("RandomCrop(32", "Resize(64")) == [
        "Linear(1800 -> 10) receives 7688 features from .view() of 8x31x31 (after "
        "Conv2d(3 -> 8)); in_features=7688 would make the chain consistent"]
    # an unknown transform: no size is stated
    assert messages(source.replace("transforms.ToTensor()", "Custom()").replace(
        "RandomCrop(32", "Resize(64")) == []


def test_spatial_arithmetic_with_layers():
    source = HEADER + """
    m = nn.Sequential(nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.MaxPool2d(3, 2, ceil_mode=True),
                      nn.ZeroPad2d(1), nn.Flatten(), nn.Linear(8 * 7 * 7, 10))
    m(torch.zeros(2, 1, 28, 28))
    """
    # 28 -> conv(3, s2, p1) 14 -> pool(3, s2, ceil) 7 -> pad 9: 8 * 9 * 9 = 648 features
    assert messages(source) == ["Linear(392 -> 10) receives 648 features from Flatten of 8x9x9 "
                                "(after Conv2d(1 -> 8)); in_features=648 would make the chain "
                                "consistent"]


def test_adaptive_pooling_gives_the_size():
    source = HEADER + """
    m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(), nn.Linear(8, 1))
    """
    found, _ = facts(source)
    assert [m.kind for ms in found.by_node.values() for m in ms] == ["flatten"]


def test_lazy_layers_and_non_torch_nn_are_silent():
    source = """
    import torch.nn as nn
    import mylib.nn as mnn
    a = nn.Sequential(nn.Linear(8, 16), nn.LazyLinear(10), nn.Linear(3, 2))
    b = mnn.Sequential(mnn.Linear(8, 16), mnn.Linear(3, 2))
    """
    assert messages(source) == ["Linear(3 -> 2) receives 10 features from LazyLinear(? -> 10); "
                                "in_features=10 would make the chain consistent"]


def test_rnn_output_and_embedding_input():
    source = HEADER + """
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(100, 32)
            self.rnn = nn.LSTM(32, 64, batch_first=True, bidirectional=True)
            self.out = nn.Linear(64, 5)
        def forward(self, tokens):
            x = self.emb(tokens)
            x, _ = self.rnn(x)
            return self.out(x[:, -1, :])
    """
    assert messages(source) == ["Linear(64 -> 5) receives 128 features from LSTM(32 -> 128); "
                                "in_features=128 would make the chain consistent"]


def test_unknown_is_a_value_with_a_reason():
    assert str(Unknown("a reshape")) == "?"
    assert Unknown("a").reason == "a"


def test_spatial_sizes_from_a_summary_call():
    source = HEADER + """
    from torchsummary import summary
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, stride=2)
            self.fc = nn.Linear(4 * 8 * 8, 2)
        def forward(self, x):
            return self.fc(torch.flatten(self.conv(x), 1))
    net = Net()
    summary(net, (3, 32, 32))
    """
    # 32 -> conv 3 stride 2: 15
    assert messages(source) == ["Linear(256 -> 2) receives 900 features from torch.flatten of "
                                "4x15x15 (after Conv2d(3 -> 4)); in_features=900 would make the "
                                "chain consistent"]
    torchinfo = source.replace("torchsummary", "torchinfo").replace("(3, 32, 32)",
                                                                    "input_size=(1, 3, 34, 34)")
    assert messages(torchinfo) == [m.replace("900", "1024").replace("15x15", "16x16")
                                   for m in messages(source)]


def test_a_construction_inside_a_function_reads_no_local_name_as_a_constant():
    source = HEADER + """
    classes = 10
    class Net(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc1 = nn.Linear(4, n)
            self.fc2 = nn.Linear(10, 2)
        def forward(self, x):
            return self.fc2(self.fc1(x))
    def main(data):
        classes = len(data)
        return Net(classes)
    """
    assert messages(source) == []
    assert len(messages(source.replace("Net(classes)", "Net(12)"))) == 1


def test_a_stated_input_belongs_to_the_names_of_one_function():
    source = HEADER + """
    def test_one():
        model = nn.Sequential(nn.Linear(32, 2))
        model(torch.randn(4, 32))
    def test_two():
        model = nn.Sequential(nn.Linear(8, 2))
        x = torch.randn(4, 8)
        model(x)
    def test_three():
        model = nn.Sequential(nn.Linear(16, 2))
        model(x)
    """
    assert messages(source) == []
    wrong = source.replace("model(torch.randn(4, 32))", "model(torch.randn(4, 30))")
    assert messages(wrong) == ["Linear(32 -> 2) receives 30 features from the input (4, 30); "
                               "in_features=30 would make the chain consistent"]


def _trigger(source: str, kind: str) -> bool:
    from torchlint.analysis.options import Options
    from torchlint.engine.triage import size_chain, triage

    found = triage(textwrap.dedent(source))
    assert found is not None
    return size_chain(kind).holds(found, Options())


def test_the_ast_trigger_needs_two_calls_a_chain_could_be_proven_from():
    two_layers = HEADER + "    head = nn.Sequential(nn.Linear(64, 128), nn.Linear(256, 10))\n"
    assert _trigger(two_layers, "size")
    # sizes from another object's attributes, subscripts or calls are never proven
    opaque = HEADER + ("    head = nn.Sequential(nn.Linear(cfg.dim, dims[0]),"
                       " nn.Linear(make(), 10))\n")
    assert not _trigger(opaque, "size")
    # one layer alone has nothing to disagree with, unless an input size is stated
    one = HEADER + "    fc = nn.Linear(64, 10)\n"
    assert not _trigger(one, "size")
    assert _trigger(one + "    y = fc(torch.randn(8, 32))\n", "size")
    # a project class used as a layer counts when built with constants in a method
    blocks = HEADER + """
    from .blocks import Block
    class Net(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.a = Block(3, 64)
            self.b = Block(64, 8)
    """
    assert _trigger(blocks, "size")
    assert not _trigger(blocks.replace("Block(3, 64)", "Block(3, width)"), "size")


def test_the_ast_trigger_of_ranks_needs_layers_of_two_ranks():
    same = HEADER + "    m = nn.Sequential(nn.Conv2d(3, c, 3), nn.BatchNorm2d(c), nn.MaxPool2d(2))\n"
    assert not _trigger(same, "rank")
    assert _trigger(same.replace("BatchNorm2d", "BatchNorm1d"), "rank")
    assert _trigger(same + "    n = nn.Linear(c, 10)\n", "rank")
    assert _trigger(same + "    y = x.view(-1, 64)\n", "rank")
