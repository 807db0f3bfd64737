"""Many cases, each in a process gpuvs supervises: the plan (`plan`), the worker process
(`worker`), the parent that runs a plan through a pool of them (`runner`), the one
supervisor of every child process gpuvs starts (`supervisor`), what a failed case is
recorded as (`policy`), the observations made apart from timing (`observe`), and how long
a plan will take from this machine's stored cases (`estimate`)."""
