"""When torch APIs appeared, were deprecated or changed behaviour: the facts behind the
version-dependent rules, kept as data in one place.

Each fact was checked against the torch wheels from 1.0 to 2.14 (what each release ships,
what warns when called); see the rule docs for what they mean in practice. A rule says
which releases it applies to with :class:`Releases` (``Rule.applies_to``): the engine does
not run it for a target outside them, and its documentation states them. Fixes that emit
an API ask :func:`fix_available` whether the code's target has it.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchlint.analysis.torchvision_weights import (
    PRETRAINED_DEPRECATED_IN,
    TORCH_FOR_TORCHVISION,
    V2_INTRODUCED_IN,
    V2_TOIMAGE_SINCE,
)

Release = tuple[int, int]  # (major, minor)


def show(release: Release) -> str:
    return f"{release[0]}.{release[1]}"


@dataclass(frozen=True)
class ApiChange:
    """One API's history: ``added`` (first release that has it), ``deprecated`` (first that
    warns about it), ``replacement`` and the release that added it."""

    api: str
    added: Release | None = None
    deprecated: Release | None = None
    replacement: str | None = None
    replacement_added: Release | None = None


# torch.load: `weights_only=` exists from 1.13; its default became True in 2.6 (2.4 and 2.5
# warn with a FutureWarning when it is left out).
LOAD_WEIGHTS_ONLY = ApiChange("torch.load(weights_only=...)", added=(1, 13))
LOAD_WEIGHTS_ONLY_BY_DEFAULT: Release = (2, 6)

# torch.cuda.amp: deprecated (FutureWarning) in 2.4 for the device-generic torch.amp.
CUDA_AMP_AUTOCAST = ApiChange("torch.cuda.amp.autocast", deprecated=(2, 4),
                              replacement='torch.amp.autocast("cuda")',
                              replacement_added=(1, 12))
CUDA_AMP_GRAD_SCALER = ApiChange("torch.cuda.amp.GradScaler", deprecated=(2, 4),
                                 replacement='torch.amp.GradScaler("cuda")',
                                 replacement_added=(2, 3))

# Deprecated since 0.4 (the release that merged Variable into Tensor), replacements as old.
CLIP_GRAD_NORM = ApiChange("torch.nn.utils.clip_grad_norm", deprecated=(0, 4),
                           replacement="torch.nn.utils.clip_grad_norm_",
                           replacement_added=(0, 4))
AUTOGRAD_VARIABLE = ApiChange("torch.autograd.Variable", deprecated=(0, 4),
                              replacement="a tensor (requires_grad_())",
                              replacement_added=(0, 4))
LOSS_SIZE_AVERAGE = ApiChange("size_average= / reduce= of the losses", deprecated=(0, 4),
                              replacement="reduction=", replacement_added=(0, 4))
# The legacy type constructors: no release removes them; torch.cuda.*Tensor warns from 2.14.
LEGACY_TENSOR_TYPES = ApiChange("torch.FloatTensor(...) and siblings",
                                replacement="torch.tensor(..., dtype=...)",
                                replacement_added=(0, 4))
LEGACY_CUDA_TENSOR_TYPES = ApiChange("torch.cuda.FloatTensor(...) and siblings",
                                     deprecated=(2, 14),
                                     replacement='torch.tensor(..., device="cuda")',
                                     replacement_added=(0, 4))

# torch.utils.checkpoint: `use_reentrant=` exists from 1.11; from 2.1 each call of
# checkpoint/checkpoint_sequential that leaves it out warns that the default will change.
CHECKPOINT_USE_REENTRANT = ApiChange("torch.utils.checkpoint.checkpoint(use_reentrant=...)",
                                     added=(1, 11), deprecated=(2, 1))
# default_collate/default_convert: public in torch.utils.data from 1.11 (the private
# torch.utils.data._utils.collate names are the same objects and do not warn).
PUBLIC_DEFAULT_COLLATE = ApiChange("torch.utils.data._utils.collate.default_collate",
                                   replacement="torch.utils.data.default_collate",
                                   replacement_added=(1, 11))
# torchvision, by the torch release each torchvision release was built for
# (torchvision_weights.py): `pretrained=` deprecated in 0.13 (torch 1.12) together with the
# arrival of `weights=`; transforms.v2.ToTensor deprecated since v2 arrived in 0.15 (torch
# 2.0), its replacement ToImage + ToDtype(scale=True) from 0.16 (torch 2.1).
TORCHVISION_PRETRAINED = ApiChange(
    "torchvision model builders' pretrained=/pretrained_backbone=",
    deprecated=TORCH_FOR_TORCHVISION[PRETRAINED_DEPRECATED_IN], replacement="weights=",
    replacement_added=TORCH_FOR_TORCHVISION[PRETRAINED_DEPRECATED_IN])
TORCHVISION_V2_TO_TENSOR = ApiChange(
    "torchvision.transforms.v2.ToTensor", added=TORCH_FOR_TORCHVISION[V2_INTRODUCED_IN],
    deprecated=TORCH_FOR_TORCHVISION[V2_INTRODUCED_IN],
    replacement="v2.ToImage() + v2.ToDtype(torch.float32, scale=True)",
    replacement_added=TORCH_FOR_TORCHVISION[V2_TOIMAGE_SINCE])


@dataclass(frozen=True)
class Releases:
    """The torch releases a rule applies to: from ``since`` (None: every earlier one) up to,
    not including, ``until`` (None: every later one). ``why`` says it in a sentence."""

    since: Release | None = None
    until: Release | None = None
    why: str = ""

    def includes(self, target: Release | None) -> bool:
        """Does the rule apply to code targeting ``target``? An unknown target: yes."""
        if target is None:
            return True
        if self.since is not None and target < self.since:
            return False
        return self.until is None or target < self.until

    def describe(self) -> str:
        if self.since is None and self.until is None:
            span = "Every torch release."
        elif self.until is None:
            span = f"torch {show(self.since)} and newer."  # type: ignore[arg-type]
        elif self.since is None:
            span = f"torch releases before {show(self.until)}."
        else:
            span = f"torch {show(self.since)} up to (not including) {show(self.until)}."
        return f"{span} {self.why}".strip()


EVERY_RELEASE = Releases()


def fix_available(change: ApiChange, target: Release | None) -> bool | None:
    """Does the code's target have ``change``'s replacement? None when the target is not
    known (a fix that needs a release newer than the oldest torchlint knows is then
    offered as unsafe)."""
    needed = change.replacement_added or change.added
    if needed is None or needed <= (0, 4):
        return True
    if target is None:
        return None
    return target >= needed
