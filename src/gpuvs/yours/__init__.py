"""Your own code, in your own process: `gpuvs.compare` (compare), the arguments copied to
each device (moving) and the outputs checked against each other (agreement), what it
returns (comparison), `gpuvs.Timer` (timer), `gpuvs run-file`'s loading (run_file), the
`%gpuvs` magic (ipython) and the `gpuvs_bench` fixture (pytest_plugin).

The sweep commands measure registered workloads in worker processes; this path measures
a callable the user hands over, by the same protocol and the same case policy."""
