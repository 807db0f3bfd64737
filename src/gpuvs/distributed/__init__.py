"""Several processes, one per device: data-parallel scaling and collective bandwidth.

`gpuvs dist` starts its ranks through torchrun's machinery (`launch`), or runs inside a
user's `torchrun` (`--launched`). Every rank runs `rank_main.serve`; rank 0 gathers the
other ranks' samples, takes the slowest rank's time per sample, and saves one
measurement per case as soon as the case finishes. Every rank times inside the watches
every other case is timed in, and takes a case again by the protocol's policy, agreed on
every rank (`tries`).

These cases are not registered as ordinary workloads: an ordinary workload runs in one
worker on one device, while these need a process group of N ranks, so they have their
own plan, launcher and tables.
"""

from __future__ import annotations

COLLECTIVE_WORKLOAD = "dist_collective"
SCALING_WORKLOAD = "dist_scaling"
WORKLOADS = (COLLECTIVE_WORKLOAD, SCALING_WORKLOAD)
