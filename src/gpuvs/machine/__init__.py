"""This machine: what it is (`env`: CPU, BLAS, GPUs, versions, the fingerprint), what its
GPU's sensors say (`telemetry`), what other processes take from it (`contention`), and the
watches built from them that every case is timed inside (`watches`)."""
