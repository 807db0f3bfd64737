"""`gpuvs predict`: an estimate of a GPU's time per call on a machine that has no GPU.

A machine's measured ceilings are kept as a device profile (`profile`); a call's counted
work (`work`: FLOPs, bytes, launches, copies — from a workload's own counts, or from the
user's torch function run once on the CPU, `counting`) and a profile give a time per
call term by term (`pricing`); the residuals of a validation run on the real GPU give its
interval, and say where the model is known to miss (`residuals`). `forecast` sets the
predicted GPU series against measured CPU ones; `validation` turns predictions and
measurements of the same cases into the error table that docs/prediction.md publishes.
"""
