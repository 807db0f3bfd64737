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
# The kernel sends the parent-death signal while the parent exits, before this process is
# given a new parent: on the 2-core test box the agent's cleanup once still saw the old
# parent after 0 s, and once (in a full `make test`) after 2 s, and left the launch's
# folder. A signalled agent waits this long to see it go. A parent that is alive and
# signalled the agent itself kills it after `supervisor.KILL_GRACE_S` (1 s) and removes
# the folder itself, so the wait costs a live parent nothing.
REPARENTED_WITHIN_S = 10.0


def main(argv: list[str] | None = None) -> None:
    parent_text, folder, *torchrun_args = argv if argv is not None else sys.argv[1:]
    parent = int(parent_text)
    die_with_parent(signal.SIGTERM, parent)
    os.environ[AGENT_VARIABLE] = str(os.getpid())
    threading.Thread(target=_orphaned, args=(parent, folder), daemon=True).start()
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.run import main as torchrun

    try:
        torchrun(torchrun_args)
    except SignalException:  # a kill by the parent, or the parent's death
        # A second SIGTERM follows the first within milliseconds (traced on the 2-core
        # box: 8–13 ms later, in two of five kills under load); raised by torchrun's
        # handler, it ended this process inside the wait below and left the folder.
        # torchrun has stopped its ranks by now: nothing is left for a signal to stop.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if _gone(parent, REPARENTED_WITHIN_S):
            shutil.rmtree(folder, ignore_errors=True)
        raise


def _gone(parent: int, within_s: float) -> bool:
    """Whether `parent` is no longer this process's parent, within `within_s`."""
    deadline = time.monotonic() + within_s
    while os.getppid() == parent:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


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
