"""Timings → answers: speedups with CIs, crossovers, (later) ceilings and bounds."""
