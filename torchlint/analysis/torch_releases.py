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
