"""What the analysis and the rules read from the settings: the lists of torch knowledge a
project may extend (module base classes, model names), with today's values as defaults.

A rule never reads configuration files; it reads ``self.context.options``. Pure data: a run
answered from the cache reads these without loading libcst.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, replace

# Classes whose subclasses are torch modules even though the base is not torch.nn.Module.
MODULE_BASES = frozenset(
    {
        "torch.nn.Module",
        "pytorch_lightning.LightningModule",
        "pytorch_lightning.core.LightningModule",
        "pytorch_lightning.core.module.LightningModule",
        "lightning.LightningModule",
        "lightning.pytorch.LightningModule",
        "lightning.pytorch.core.LightningModule",
        "lightning.pytorch.core.module.LightningModule",
    }
)

DATASET_BASES = frozenset(
    {
        "torch.utils.data.Dataset",
        "torch.utils.data.dataset.Dataset",
        "torch.utils.data.IterableDataset",
        "torch.utils.data.dataset.IterableDataset",
    }
)

# Words that name a model: ``model(x)``, ``self.generator(z)``, a ``net`` parameter, the last
# word of ``ema_model`` / ``fake_discriminator`` (see torch_facts.is_model_name)
MODEL_NAMES = frozenset({"model", "net", "network", "generator", "discriminator", "netg",
                         "netd", "student", "teacher", "classifier", "backbone", "encoder",
                         "decoder"})


@dataclass(frozen=True)
class Options:
    # classes whose subclasses are torch modules (qualified names)
    module_bases: frozenset[str] = MODULE_BASES
    # classes whose subclasses are datasets
    dataset_bases: frozenset[str] = DATASET_BASES
    # words that name a model (``model``, ``net``, ``generator``...): see torch_facts
    model_names: frozenset[str] = MODEL_NAMES
    # preview mode: rules may turn on behaviours that have not yet earned their place
    preview: bool = False
    # the torch release the code targets, as (major, minor); None: not known
    target_torch: tuple[int, int] | None = None

    def extended(self, *, module_bases: Iterable[str] = (),
                 model_names: Iterable[str] = ()) -> Options:
        """These options with more module bases and model names."""
        return replace(self, module_bases=self.module_bases | frozenset(module_bases),
                       model_names=self.model_names | frozenset(n.lower() for n in model_names))

    def targets_at_least(self, major: int, minor: int) -> bool | None:
        """Does the code target torch ``major.minor`` or newer? None when the target is not
        known (rules then assume the newest release for messages and stay safe for fixes)."""
        if self.target_torch is None:
            return None
        return self.target_torch >= (major, minor)

    @property
    def fingerprint(self) -> str:
        """A stable digest of every option (for cache keys)."""
        parts = [f"{key}={sorted(value) if isinstance(value, frozenset) else value}"
                 for key, value in sorted(vars(self).items())]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()
