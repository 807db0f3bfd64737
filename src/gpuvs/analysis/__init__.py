"""What the numbers mean, measuring nothing: speedups with their CIs (`speedup`), where the
GPU starts to win (`crossover`, and the sizes that narrow it: `refine`), this machine's
ceilings read off their probes (`ceilings`), what bounds a case (`roofline`) and why
(`explain`), run against run and the gate (`regression`), and what a call costs
(`cost`)."""
