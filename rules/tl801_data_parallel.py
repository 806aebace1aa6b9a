from __future__ import annotations

import libcst as cst

from torchlint.rule import Rule

_DATA_PARALLEL = frozenset({
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
})


class DataParallel(Rule):
    """## What it does
    Flags models wrapped in `torch.nn.DataParallel` (or `torch.nn.parallel.DataParallel`).

    ## Why is this bad?
    `DataParallel` runs every GPU from one Python process: each step it scatters the batch,
    copies the whole model to every device again, runs the replicas in threads that fight
    over the GIL, and gathers all outputs (and the loss) on the first GPU, which ends up with
    more memory use and more work than the others. `DistributedDataParallel` starts one
    process per GPU, keeps a replica on each for good and only all-reduces gradients,
    overlapping that with the backward pass; it is faster even on a single machine, and the
    PyTorch documentation recommends it instead.

    ## Example
    ```python
    import torch.nn as nn

    model = nn.DataParallel(nn.Linear(512, 10)).cuda()
    ```

    Use instead:
    ```python
    import os

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("nccl")  # one process per GPU, e.g. started by torchrun
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DistributedDataParallel(nn.Linear(512, 10).cuda(), device_ids=[local_rank])
    ```

    ## Fix safety
    No fix: moving to `DistributedDataParallel` changes how the program is launched, how
    data is sharded (`DistributedSampler`) and how checkpoints and logs are written.
    """

    code = "TL801"
    name = "data-parallel"
    message = "DataParallel is single-process and GIL-bound; use DistributedDataParallel"

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.call_name(node) in _DATA_PARALLEL:
            self.report(node)
