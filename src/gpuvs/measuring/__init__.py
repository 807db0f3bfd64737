"""Measuring one case: the protocol's five steps (`protocol`), when to stop sampling
(`criteria`), the caveats read off the samples (`caveats`), the hooks every case is timed
inside (`watch`), and the posts' own timing methods, kept for their `as_written` replays
(`as_written`). Nothing here knows a framework: clocks and watches are handed in."""
