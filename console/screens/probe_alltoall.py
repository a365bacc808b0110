"""`x`: which nodes the all-to-all runs on (a Slurm host list, filled in); ``enter`` starts.

The all-reduce dialog (``fleet.console.screens.probe_allreduce``) with its own words: filled with
the marked nodes, or the chosen job's, or the node under the cursor; one node runs over NVLink,
several over every rail and spine (``fleet alltoall --nodes``), then once per rail to name what
holds it back. Dismisses with the nodes or None.
"""

from __future__ import annotations

from typing import ClassVar

from fleet.console.screens.probe_allreduce import AllreduceDialog


class AlltoallDialog(AllreduceDialog):
    PROMPT: ClassVar[str] = ("All-to-all (nccl-tests alltoall_perf): one node runs over NVLink; several send every "
                             "GPU's data to every other over every rail and spine, then each rail alone to name what "
                             "holds it back. It shares the GPUs and NICs with any job on them. Enter starts.")
