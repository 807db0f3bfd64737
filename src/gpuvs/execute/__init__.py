"""Many cases, each in a process gpuvs supervises: the plan (`plan`), the worker process
(`worker`), the parent that runs a plan through a pool of them (`runner`), the one
supervisor of every child process gpuvs starts (`supervisor`), and what a failed case is
recorded as (`policy`)."""
