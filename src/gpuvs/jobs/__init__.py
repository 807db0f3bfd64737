"""What each command does, as a plain function that returns the run: measure a suite
(`suite`), replay the posts (`seeds`), probe this machine's ceilings (`ceilings`), run
the ranks (`dist`), time the user's own file (`own`), measure a prediction's CPU cases
(`predict`). The command line parses its flags, calls one of these and shows what it
returns (`cli/`); a benchmark or a script calls the same functions with no parser at all.

Each job records its run through `recording.record`: started (or resumed), executed
guarded — Ctrl-C and SIGTERM leave it `interrupted` with every finished case kept —
and finished. It is heard as it goes through a `recording.Listener` (the run's id once
it exists, each case as it ends, a line it says); by default it says nothing."""
