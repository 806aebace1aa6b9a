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
# Learning-rate schedulers: from 1.1, `scheduler.step()` belongs after `optimizer.step()`
# (before 1.1 the documented order was the reverse); stepping first warns from then on.
SCHEDULER_STEP_AFTER_OPTIMIZER: Release = (1, 1)


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


def fix_available(change: ApiChange, target: Release | None) -> bool:
    """Does the code's target have ``change``'s replacement? With no known target the code
    is taken to run on a current torch, as the rules' messages assume: a project that
    still supports an older release says so in its torch requirement or ``target-torch``."""
    needed = change.replacement_added or change.added
    if needed is None or target is None:
        return True
    return target >= needed


# ================================================================ deprecated and removed APIs
# The APIs of the deprecated-API rules (TL706-TL717, TL721). Every release below was read
# from the torch wheels 1.0 to 2.14 (which release ships a function, which one warns when it
# is called, which one replaced it by a stub that raises) and, for 2.13 and 2.14, by calling
# the API. ``None`` for ``replacement_added`` means the replacement is in every release
# checked (1.0 is the oldest); OLDEST_CHECKED as ``deprecated`` means the API already warns
# there.
# The oldest release the facts were checked on: "deprecated since OLDEST_CHECKED" means the
# deprecation is at least that old.
OLDEST_CHECKED: Release = (1, 0)


@dataclass(frozen=True)
class Deprecation:
    """A deprecated or removed API as the rules see it.

    ``change`` its history and main replacement; ``removed`` the first release where calling
    it raises (None: it still works); ``names`` every qualified name it is reached by (the
    public one first); ``note`` how the replacement differs, in a few words."""

    change: ApiChange
    names: tuple[str, ...]
    removed: Release | None = None
    note: str = ""

    @property
    def api(self) -> str:
        return self.change.api

    @property
    def replacement(self) -> str:
        replacement = self.change.replacement
        assert replacement is not None, self.api
        return replacement

    @property
    def since(self) -> Release | None:
        """The first release the rule has something to say about: where the API started to
        warn (or was documented as deprecated); for an API never deprecated, where its
        replacement arrived."""
        return self.change.deprecated or self.change.replacement_added


def _torch(name: str, *, deprecated: Release, replacement: str,
           replacement_added: Release | None, removed: Release | None = None,
           note: str = "", also: tuple[str, ...] = ()) -> Deprecation:
    change = ApiChange(name, deprecated=deprecated, replacement=replacement,
                       replacement_added=replacement_added)
    return Deprecation(change, (name, *also), removed=removed, note=note)


# ------------------------------------------------ TL706: removed linear-algebra functions
# All five warned from 1.9; the native op then gave way to a stub raising RuntimeError
# ("deprecated since version 1.9 and is now removed"). The attribute still exists in 2.x.
SOLVE = _torch("torch.solve", deprecated=(1, 9), removed=(1, 12),
               replacement="torch.linalg.solve", replacement_added=(1, 8),
               note="arguments reversed, no LU factorisation returned")
SYMEIG = _torch("torch.symeig", deprecated=(1, 9), removed=(2, 0),
                replacement="torch.linalg.eigh", replacement_added=(1, 8),
                note="reads the lower triangle by default; eigvalsh for values only")
EIG = _torch("torch.eig", deprecated=(1, 9), removed=(1, 13),
             replacement="torch.linalg.eig", replacement_added=(1, 9),
             note="returns complex tensors")
LSTSQ = _torch("torch.lstsq", deprecated=(1, 9), removed=(1, 13),
               replacement="torch.linalg.lstsq", replacement_added=(1, 9),
               note="arguments reversed")
MATRIX_RANK = _torch("torch.matrix_rank", deprecated=(1, 9), removed=(1, 13),
                     replacement="torch.linalg.matrix_rank", replacement_added=(1, 8))
REMOVED_LINALG = (SOLVE, SYMEIG, EIG, LSTSQ, MATRIX_RANK)

# ------------------------------------------------ TL707: table A of the catalogue
# qr and cholesky warn from 1.9 and raise from 2.14 (pytorch#186815, #186817).
QR = _torch("torch.qr", deprecated=(1, 9), removed=(2, 14),
            replacement="torch.linalg.qr", replacement_added=(1, 8),
            note="some=False becomes mode='complete'")
CHOLESKY = _torch("torch.cholesky", deprecated=(1, 9), removed=(2, 14),
                  replacement="torch.linalg.cholesky", replacement_added=(1, 8),
                  note="upper=True stays upper=True")
# upper=True: linalg.cholesky(A, upper=True); offered from 1.11, where the keyword is
# certainly there (its .mH alternative arrived then too)
CHOLESKY_UPPER = ApiChange("torch.cholesky(upper=True)", deprecated=(1, 9),
                           replacement="torch.linalg.cholesky(A, upper=True)",
                           replacement_added=(1, 11))
# documented as deprecated from 1.7 ("use torch.outer"), never warns
GER = _torch("torch.ger", deprecated=(1, 7), replacement="torch.outer",
             replacement_added=(1, 7))
CHAIN_MATMUL = _torch("torch.chain_matmul", deprecated=(1, 9),
                      replacement="torch.linalg.multi_dot", replacement_added=(1, 9),
                      note="takes one list of tensors")
LU_SOLVE = _torch("torch.lu_solve", deprecated=(1, 13), replacement="torch.linalg.lu_solve",
                  replacement_added=(1, 13), note="arguments reordered: (LU, pivots, B)")
LU = _torch("torch.lu", deprecated=(1, 13), replacement="torch.linalg.lu_factor",
            replacement_added=(1, 11), note="lu_factor_ex when the infos are wanted")
LU_FACTOR_EX = ApiChange("torch.lu(get_infos=True)", deprecated=(1, 13),
                         replacement="torch.linalg.lu_factor_ex", replacement_added=(1, 11))
# documented as deprecated from 1.8, never warns
SVD = _torch("torch.svd", deprecated=(1, 8), replacement="torch.linalg.svd",
             replacement_added=(1, 8),
             note="returns Vh instead of V, full matrices by default")
TRIANGULAR_SOLVE = _torch("torch.triangular_solve", deprecated=(1, 11),
                          replacement="torch.linalg.solve_triangular",
                          replacement_added=(1, 11),
                          note="arguments reversed, upper= required, returns the solution only")
DEPRECATED_LINALG = (QR, CHOLESKY, GER, CHAIN_MATMUL, LU_SOLVE, LU, SVD, TRIANGULAR_SOLVE)

# ------------------------------------------------ TL708: torch.norm
# documented as deprecated from 1.7; vector_norm and matrix_norm arrived in 1.9
NORM = _torch("torch.norm", deprecated=(1, 7), replacement="torch.linalg.vector_norm",
              replacement_added=(1, 9), also=("torch.functional.norm",),
              note="or torch.linalg.matrix_norm for matrix norms")
MATRIX_NORM = ApiChange("torch.norm(p='nuc')", deprecated=(1, 7),
                        replacement="torch.linalg.matrix_norm", replacement_added=(1, 9))

# ------------------------------------------------ TL709 / TL710: weight and spectral norm
# weight_norm warns from 2.1 (a FutureWarning from 2.4), when the parametrization arrived.
WEIGHT_NORM = _torch("torch.nn.utils.weight_norm", deprecated=(2, 1),
                     replacement="torch.nn.utils.parametrizations.weight_norm",
                     replacement_added=(2, 1), also=("torch.nn.utils.weight_norm.weight_norm",),
                     note="weight_g/weight_v become parametrizations.weight.original0/1")
REMOVE_WEIGHT_NORM = _torch(
    "torch.nn.utils.remove_weight_norm", deprecated=(2, 1),
    replacement="torch.nn.utils.parametrize.remove_parametrizations",
    replacement_added=(1, 9), also=("torch.nn.utils.weight_norm.remove_weight_norm",))
# Not deprecated: the docs say the old spectral_norm "will be deprecated"; the
# parametrization exists from 1.9.
SPECTRAL_NORM = Deprecation(
    ApiChange("torch.nn.utils.spectral_norm",
              replacement="torch.nn.utils.parametrizations.spectral_norm",
              replacement_added=(1, 9)),
    ("torch.nn.utils.spectral_norm", "torch.nn.utils.spectral_norm.spectral_norm"),
    note="state_dict keys change")
REMOVE_SPECTRAL_NORM = Deprecation(
    ApiChange("torch.nn.utils.remove_spectral_norm",
              replacement="torch.nn.utils.parametrize.remove_parametrizations",
              replacement_added=(1, 9)),
    ("torch.nn.utils.remove_spectral_norm",
     "torch.nn.utils.spectral_norm.remove_spectral_norm"))

# ------------------------------------------------ TL711: assert_allclose (FutureWarning, 1.12)
ASSERT_ALLCLOSE = _torch("torch.testing.assert_allclose", deprecated=(1, 12),
                         replacement="torch.testing.assert_close", replacement_added=(1, 9),
                         also=("torch.testing._comparison.assert_allclose",),
                         note="also checks dtype, device and type")

# ------------------------------------------------ TL712: functorch (FutureWarning from 2.0)
# functorch's versions of these warn and call torch.func's with the same arguments.
FUNCTORCH_SAME_API = ("vmap", "grad", "grad_and_value", "jvp", "vjp", "jacrev", "jacfwd",
                      "hessian", "functionalize")
FUNCTORCH = {
    name: _torch(f"functorch.{name}", deprecated=(2, 0), replacement=f"torch.func.{name}",
                 replacement_added=(2, 0))
    for name in FUNCTORCH_SAME_API
}
FUNCTORCH.update({
    "make_functional": _torch("functorch.make_functional", deprecated=(2, 0),
                              replacement="torch.func.functional_call",
                              replacement_added=(2, 0), note="a different API"),
    "make_functional_with_buffers": _torch(
        "functorch.make_functional_with_buffers", deprecated=(2, 0),
        replacement="torch.func.functional_call", replacement_added=(2, 0),
        note="a different API"),
    "combine_state_for_ensemble": _torch(
        "functorch.combine_state_for_ensemble", deprecated=(2, 0),
        replacement="torch.func.stack_module_state", replacement_added=(2, 0),
        note="a different API"),
})

# ------------------------------------------------ TL713: sdp_kernel (FutureWarning, 2.3)
SDP_KERNEL = _torch("torch.backends.cuda.sdp_kernel", deprecated=(2, 3),
                    replacement="torch.nn.attention.sdpa_kernel", replacement_added=(2, 3),
                    note="takes a list of SDPBackend members")

# ------------------------------------------------ TL714: upsampling
# F.upsample* warn in every release checked (F.interpolate is as old); the two module classes
# are documented as deprecated in favour of interpolate / nn.Upsample and no longer warn.
UPSAMPLE = _torch("torch.nn.functional.upsample", deprecated=OLDEST_CHECKED,
                  replacement="torch.nn.functional.interpolate", replacement_added=None)
UPSAMPLE_NEAREST = _torch("torch.nn.functional.upsample_nearest", deprecated=OLDEST_CHECKED,
                          replacement="torch.nn.functional.interpolate",
                          replacement_added=None)
UPSAMPLE_BILINEAR = _torch("torch.nn.functional.upsample_bilinear",
                           deprecated=OLDEST_CHECKED,
                           replacement="torch.nn.functional.interpolate",
                           replacement_added=None)
UPSAMPLING_NEAREST_2D = _torch("torch.nn.UpsamplingNearest2d", deprecated=OLDEST_CHECKED,
                               replacement="torch.nn.Upsample", replacement_added=None)
UPSAMPLING_BILINEAR_2D = _torch("torch.nn.UpsamplingBilinear2d", deprecated=OLDEST_CHECKED,
                                replacement="torch.nn.Upsample", replacement_added=None)
UPSAMPLING = (UPSAMPLE, UPSAMPLE_NEAREST, UPSAMPLE_BILINEAR, UPSAMPLING_NEAREST_2D,
              UPSAMPLING_BILINEAR_2D)

# ------------------------------------------------ TL715: torch.range (warns in every release)
RANGE = _torch("torch.range", deprecated=OLDEST_CHECKED, replacement="torch.arange",
               replacement_added=None, note="arange excludes the end")

# ------------------------------------------------ TL716: set_default_tensor_type (2.1)
SET_DEFAULT_TENSOR_TYPE = _torch("torch.set_default_tensor_type", deprecated=(2, 1),
                                 replacement="torch.set_default_dtype",
                                 replacement_added=None,
                                 note="and torch.set_default_device for a device")
SET_DEFAULT_DEVICE = ApiChange("torch.set_default_tensor_type(torch.cuda.FloatTensor)",
                               deprecated=(2, 1), replacement="torch.set_default_device",
                               replacement_added=(2, 0))

# ------------------------------------------------ TL717: torch.cpu.amp, cuda custom_fwd/bwd
# All FutureWarning from 2.4. torch.amp.autocast (the module torch/amp/autocast_mode.py) is
# there from 1.12; torch.amp.GradScaler from 2.3 (torch.cpu.amp.GradScaler itself appeared in
# 2.3); torch.amp.custom_fwd/custom_bwd from 2.4.
CPU_AUTOCAST = _torch("torch.cpu.amp.autocast", deprecated=(2, 4),
                      replacement='torch.amp.autocast("cpu")', replacement_added=(1, 12),
                      also=("torch.cpu.amp.autocast_mode.autocast",))
CPU_GRAD_SCALER = _torch("torch.cpu.amp.GradScaler", deprecated=(2, 4),
                         replacement='torch.amp.GradScaler("cpu")', replacement_added=(2, 3),
                         also=("torch.cpu.amp.grad_scaler.GradScaler",))
CUDA_CUSTOM_FWD = _torch("torch.cuda.amp.custom_fwd", deprecated=(2, 4),
                         replacement='torch.amp.custom_fwd(device_type="cuda")',
                         replacement_added=(2, 4),
                         also=("torch.cuda.amp.autocast_mode.custom_fwd",))
CUDA_CUSTOM_BWD = _torch("torch.cuda.amp.custom_bwd", deprecated=(2, 4),
                         replacement='torch.amp.custom_bwd(device_type="cuda")',
                         replacement_added=(2, 4),
                         also=("torch.cuda.amp.autocast_mode.custom_bwd",))
AMP_APIS = (CPU_AUTOCAST, CPU_GRAD_SCALER, CUDA_CUSTOM_FWD, CUDA_CUSTOM_BWD)

# ------------------------------------------------ TL721: F.sigmoid / F.tanh
# Warned from 0.4.1 to 1.13 ("use torch.sigmoid"); the warnings were removed in 2.0.
F_SIGMOID = Deprecation(ApiChange("torch.nn.functional.sigmoid", replacement="torch.sigmoid"),
                        ("torch.nn.functional.sigmoid",))
F_TANH = Deprecation(ApiChange("torch.nn.functional.tanh", replacement="torch.tanh"),
                     ("torch.nn.functional.tanh",))


def by_name(*deprecations: Deprecation) -> dict[str, Deprecation]:
    """Each qualified name of the given APIs -> its record."""
    return {name: d for d in deprecations for name in d.names}


def earliest(*deprecations: Deprecation) -> Release | None:
    """The oldest release any of these APIs has something to say about."""
    releases = [d.since for d in deprecations]
    if any(r is None for r in releases):
        return None
    return min(r for r in releases if r is not None)
