"""Faster and cheaper? Prices as the user gives them, the cost per call and the cost ratio
in the answer (its CI the speedup's), energy and peak memory beside the time in the
tables, the CSV and the report's plot, and seed 003's time and energy per epoch."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.helpers import invoke
from tests.report.samples import GPU, SIZES, gpu_sweep
from tests.report.samples import measurement as sample

from gpuvs import config as cfg
from gpuvs import seeds
from gpuvs.analysis import speedup
from gpuvs.analysis.cost import Prices, cheaper, per_million_calls
from gpuvs.errors import UsageError
from gpuvs.machine import energy
from gpuvs.model import Measurement
from gpuvs.report import resources
from gpuvs.report.layout import COLUMNS, result_tables
from gpuvs.report.plots import all_plots
from gpuvs.report.seed_tables import claims_table
from gpuvs.report.verdict import verdict_table
from gpuvs.seeds.seed003 import epoch_table
from gpuvs.store.export import case_row

PRICES = Prices(cpu_per_h=0.40, gpu_per_h=2.50)


def test_prices_are_parsed_from_the_flag_and_the_pyproject_table(tmp_path: Path) -> None:
    assert cfg.parse_prices(["cpu=0.40,gpu=2.50", "kwh=0.3"]) == (
        ("cpu", 0.4), ("gpu", 2.5), ("kwh", 0.3))
    (tmp_path / "pyproject.toml").write_text("[tool.gpuvs.prices]\ncpu = 0.40\ngpu = 2.50\n")
    config = cfg.build({}, pyproject=tmp_path / "pyproject.toml")
    assert Prices.of(config.prices) == PRICES


@pytest.mark.parametrize(("spec", "message"), [
    ("tpu=3", "unknown price 'tpu'; known: cpu, gpu, kwh; e.g. --price cpu=0.40,gpu=2.50"),
    ("cpu=-1", "price cpu=-1.0 must be a positive number; e.g. --price"),
    ("gpu", "price 'gpu' must be NAME=NUMBER with NAME one of cpu, gpu, kwh; e.g."),
    ("cpu=1,cpu=2", None),
])
def test_a_bad_price_names_itself_and_what_is_accepted(spec: str, message: str | None) -> None:
    if message is None:  # the last one given wins, as with any repeated flag
        assert cfg.parse_prices([spec]) == (("cpu", 2.0),)
        return
    with pytest.raises(UsageError) as e:
        cfg.parse_prices([spec])
    assert str(e.value).startswith(message)


def test_the_command_line_refuses_a_bad_price_in_one_line() -> None:
    result = invoke("run", "-w", "matmul", "--dry-run", "--price", "tpu=3")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: unknown price 'tpu'; known: cpu, gpu, kwh; e.g. --price cpu=0.40,gpu=2.50 (an "
        "hour of each) or kwh=0.30"]
    bad_watts = invoke("run", "-w", "matmul", "--dry-run", "--cpu-watts", "-5")
    assert bad_watts.exit_code == 2
    assert "--cpu-watts must be a positive number of watts, e.g. 150; got -5" in bad_watts.output


def at(ms: list[Measurement], device: str, size: int) -> Measurement:
    return next(m for m in ms if m.case.device == device and m.case.size == size
                and m.case.param("data", "resident") == "resident")


def test_the_cost_ratio_is_the_speedup_scaled_by_the_prices_ci_included() -> None:
    ms = gpu_sweep()
    cpu, gpu = at(ms, "cpu", SIZES[-1]), at(ms, GPU, SIZES[-1])
    s = speedup.of(cpu, gpu)
    r = cheaper(cpu, gpu, s, PRICES)
    assert r is not None
    k = 0.40 / 2.50
    assert (r.estimate, r.low, r.high) == pytest.approx((s.estimate * k, s.low * k, s.high * k))
    assert per_million_calls(gpu, PRICES) == pytest.approx(
        2.50 / 3600 * gpu.summary.median * 1e6)  # type: ignore[union-attr]
    (answer,) = dict(verdict_table(ms, PRICES).rows).values()  # type: ignore[arg-type]
    found = re.search(r"at n = 1e6; ([\d.]+)× \[([\d.]+), ([\d.]+)\] cheaper per call at the "
                      r"prices given", answer)
    assert found is not None, answer
    assert float(found.group(1)) == pytest.approx(r.estimate, rel=2e-3)
    assert float(found.group(2)) == pytest.approx(r.low, rel=2e-3)
    assert "at the prices given (cpu 0.4 and gpu 2.5 an hour)" in verdict_table(
        ms, PRICES).notes[-1]


def test_without_prices_no_cost_is_shown_and_without_cpu_energy_no_energy_cost() -> None:
    ms = gpu_sweep()
    (plain,) = dict(verdict_table(ms).rows).values()  # type: ignore[arg-type]
    assert "cheaper" not in plain and "cost" not in plain
    (priced,) = dict(verdict_table(ms, Prices(cpu_per_h=0.4, gpu_per_h=2.5, kwh=0.3))
                     .rows).values()  # type: ignore[arg-type]
    assert "; no cost ratio: no CPU energy to price at the kWh price (--cpu-watts declares " \
           "it)" in priced


def with_energy(m: Measurement) -> Measurement:
    """`m` as the energy watches leave it: 700 W over 2 s on the GPU, 80 W idle; a
    declared 150 W on the CPU."""
    from dataclasses import replace

    if m.case.device == "cpu":
        extra = {energy.CPU_DECLARED_W: 150.0, energy.CPU_NONE: float(energy.NoEnergy.NO_RAPL),
                 energy.WINDOW_S: 1.2, "peak_host_bytes": 3 * 1024**2}
    else:
        extra = {energy.GPU_J: 1400.0, energy.WINDOW_S: 2.0, energy.CALLS: 1000.0,
                 energy.GPU_IDLE_W: 80.0, "peak_device_bytes": 4 * 1024**3,
                 "peak_host_bytes": 1024**2}
    return replace(m, counters={**m.counters, **extra})


def test_energy_and_peaks_stand_beside_the_time_and_their_notes_say_what_they_are() -> None:
    ms = [with_energy(m) for m in gpu_sweep()]
    table = result_tables(ms)[0]
    rows = {(r[0], r[2], r[4]): dict(zip(COLUMNS, r, strict=True)) for r in table.rows}
    gpu = rows["1e6", GPU, "resident"]
    assert (gpu["energy/call"], gpu["above idle"], gpu["power"]) == ("1.4 J", "1.24 J", "700 W")
    assert (gpu["peak host"], gpu["peak device"]) == ("1 MiB", "4 GiB")
    cpu = rows["1e6", "cpu", ""]
    assert cpu["energy/call"].endswith(" declared") and cpu["power"] == "150 W declared"
    notes = "\n".join(table.notes)
    assert "above idle: less the idle power measured before the first case (cuda:0 80 W)" in notes
    assert "energy/call on the CPU: 150 W declared (--cpu-watts) × time per call, not " \
           "measured" in notes
    assert "CPU energy: not readable here (no RAPL" in notes
    row = case_row(ms[0] if ms[0].case.device != "cpu" else ms[1])
    assert row["energy_j"] == pytest.approx(1.4) and row["energy_measured"] is True
    assert row["peak_device_bytes"] == 4 * 1024**3


def test_the_report_plots_energy_against_time_one_line_per_backend_and_device() -> None:
    ms = [with_energy(m) for m in gpu_sweep()]
    (plot,) = [p for p in all_plots(ms) if p.section == "energy"]
    labels = [s.label for s in plot.series]
    assert labels == ["numpy cpu (declared)", "torch cuda:0 · end-to-end",
                      "torch cuda:0 · resident"]
    resident = plot.series[2]
    assert len(resident.x) == len(SIZES) and resident.y == (1.4,) * len(SIZES)
    assert resident.x == tuple(sorted(resident.x))  # from the smallest size up
    assert plot.xunit == "s" and plot.yunit == "J"
    assert not [p for p in all_plots(gpu_sweep()) if p.section == "energy"]


def test_a_case_measured_without_energy_shows_no_energy_column_or_note() -> None:
    table = result_tables([sample("numpy", "cpu", 1000)])[0]
    energy_at = [COLUMNS.index(c) for c in resources.ENERGY_COLUMNS]
    assert all(not row[i] for row in table.rows for i in energy_at)
    assert not any("energy" in n for n in table.notes)


def test_seed_003_answers_time_and_energy_per_epoch_and_says_why_the_cpu_has_none() -> None:
    from tests.seeds.test_seed003 import _run

    ms = [with_energy(m) if m.case.variant == "correct" else m for m in _run(gpu=True)]
    rows = {r[0]: r for r in claims_table(seeds.get("003"), ms).rows}
    why = rows["GPU vs CPU, Keras"][5]
    # 1329 steps of 8 ms + 0.3 ms loading, 1.4 J a step; the CPU's from a declared power
    assert "an epoch: 11 s and 1.86 kJ on the GPU, 4.4 min and " in why, why
    assert rows["GPU: Keras fit, per step"][6] == "1.4 J (1.24 J above idle)"
    assert rows["GPU: Keras fit, per step"][7] == "4 GiB"
    keras_gpu = next(r for r in epoch_table(ms).rows if r[:3] == ("Keras step", "GPU", "32"))
    assert keras_gpu[-2:] == ("1.4 J", "1.86 kJ")


def test_seed_003s_cpu_rows_say_plainly_that_cpu_energy_is_not_measurable_here() -> None:
    from dataclasses import replace

    from tests.seeds.test_seed003 import _run

    unread = {energy.CPU_NONE: float(energy.NoEnergy.NO_RAPL), energy.WINDOW_S: 1.1}
    ms = [replace(m, counters={**m.counters, **unread})
          if m.case.device == "cpu" and m.case.variant == "correct" else
          with_energy(m) if m.case.variant == "correct" else m for m in _run(gpu=True)]
    rows = {r[0]: r for r in claims_table(seeds.get("003"), ms).rows}
    no_rapl = "not readable here (no RAPL: no /sys/class/powercap, as in most VMs)"
    assert rows["CPU: Keras fit, per step"][6] == no_rapl
    assert f"4.4 min (energy {no_rapl}) on the CPU" in rows["GPU vs CPU, Keras"][5]
    keras_cpu = next(r for r in epoch_table(ms).rows if r[:3] == ("Keras step", "CPU", "32"))
    assert keras_cpu[-2:] == (no_rapl, "")


def test_a_million_calls_cost_is_an_amount_in_the_prices_currency() -> None:
    """Issue 42: `cost/1M calls` printed 5.27e-05, not an amount a price reads as."""
    gpu = at(gpu_sweep(), GPU, SIZES[0])
    cheap = Prices(gpu_per_h=0.01)  # a small call at a low price: under a hundredth
    cost = per_million_calls(gpu, cheap)
    assert cost is not None and cost < 1e-4
    (table, *_) = result_tables([gpu], prices=cheap)
    (cell,) = [row[COLUMNS.index(resources.COST_COLUMN)] for row in table.rows]
    assert cell.startswith("0.0000") and "e" not in cell
    assert float(cell) == pytest.approx(cost, rel=5e-3)
