"""The torchrun that `gpuvs dist` starts: `python -m gpuvs.distributed.agent PARENT FOLDER
TORCHRUN-ARGUMENTS…`, torchrun's own agent run in this process and tied to the gpuvs
parent (pid PARENT) that started it.

A `kill -KILL` of `gpuvs dist` used to leave torchrun and every rank running past the
case's timeout: the parent's own kill of its child's process tree cannot run once the
parent is gone. So each link of the chain dies with the one above it:

- this agent asks the kernel for SIGTERM when its parent dies
  (`supervisor.die_with_parent`); torchrun stops its ranks on SIGTERM as on any
  shutdown;
- each rank asks for SIGTERM when this agent dies (`rank_main`, which finds the agent's
  pid in AGENT_VARIABLE), so a SIGKILL of the agent itself leaves no rank either;
- a thread here is the backstop: once the parent is gone, torchrun has ORPHAN_GRACE_S to
  stop, then this process ends regardless.

The launch's FOLDER (the spec, rank 0's events, torchrun's logs, which torchrun would
otherwise leave in $TMPDIR at every start) is the parent's to remove; when the parent is
gone, this agent removes it.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time

from gpuvs.execute.supervisor import die_with_parent

AGENT_VARIABLE = "GPUVS_DIST_AGENT"
ORPHAN_GRACE_S = 5.0
POLL_S = 0.5


def main(argv: list[str] | None = None) -> None:
    parent_text, folder, *torchrun_args = argv if argv is not None else sys.argv[1:]
    parent = int(parent_text)
    die_with_parent(signal.SIGTERM, parent)
    os.environ[AGENT_VARIABLE] = str(os.getpid())
    threading.Thread(target=_orphaned, args=(parent, folder), daemon=True).start()
    from torch.distributed.run import main as torchrun

    try:
        torchrun(torchrun_args)
    finally:
        if os.getppid() != parent:
            shutil.rmtree(folder, ignore_errors=True)


def _orphaned(parent: int, folder: str) -> None:
    """End this process ORPHAN_GRACE_S after its parent is gone, whatever torchrun is
    doing then (a SIGTERM is only handled when torchrun's main thread returns to Python)."""
    while os.getppid() == parent:
        time.sleep(POLL_S)
    time.sleep(ORPHAN_GRACE_S)
    shutil.rmtree(folder, ignore_errors=True)
    os._exit(1)


if __name__ == "__main__":
    main()
