"""This machine: what it is (`env`: CPU, BLAS, GPUs, versions, the fingerprint), what its
GPU's sensors say (`telemetry`), what other processes take from it (`contention`), the
energy its counters give (`energy`, and the CPU's through powercap: `rapl`), the peak
memory of a case (`memory`), and the watches built from them that every case is timed
inside (`watches`)."""
