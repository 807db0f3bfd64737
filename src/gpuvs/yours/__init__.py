"""Your own code: `gpuvs.compare` in your own process (compare), the arguments copied to
each device (moving) and the outputs checked against each other (agreement), what it
returns (comparison) and why it came out so (explaining), `gpuvs.Timer` (timer), `gpuvs
run-file` in worker processes of its own (run_file, file_runner, file_worker), and
`gpuvs.compare(…, processes=N)` through them (workers), the
`%gpuvs` magic (ipython) and the `gpuvs_bench` fixture (pytest_plugin).

The sweep commands measure registered workloads in worker processes; this path measures
a callable the user hands over, by the same protocol and the same case policy."""
