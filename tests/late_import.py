"""A module that only the `test_late_import` workload (tests.fakes) imports: objects that
live as long as the process, like a framework's, made during a case."""

LONG_LIVED = [[] for _ in range(1000)]
