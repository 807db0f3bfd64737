"""This machine: what it is (`env`: CPU, BLAS, GPUs, versions, the fingerprint), what its
GPU's sensors say (`telemetry`), what other processes take from it (`contention`), the
energy its counters give (`energy`, and the CPU's through powercap: `rapl`), the peak
memory of a case (`memory`), and the sensors assembled into the watches every case is
timed inside (`sensors`)."""
