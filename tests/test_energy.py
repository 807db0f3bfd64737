"""Energy per call. RAPL is read from a powercap tree built under tmp_path: these machines
have none (no /sys/class/powercap on the VMs), so a synthetic tree is the only way to
read one here, and it is read by the same code, file by file. NVML does not exist without
an NVIDIA driver, so the CPU tests hand the GPU watch a stand-in NVML module, as the
telemetry tests do; the `gpu` tests read a real card."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuvs.machine import energy, rapl
from gpuvs.model import Case, Measurement, Status

MAX_RANGE = 262_143_328_850
NOBODY = 65534


def zone(root: Path, name: str, label: str, uj: int) -> Path:
    z = root / name
    z.mkdir(parents=True)
    (z / "name").write_text(label + "\n")
    (z / "energy_uj").write_text(f"{uj}\n")
    (z / "max_energy_range_uj").write_text(f"{MAX_RANGE}\n")
    return z


@pytest.fixture
def powercap(tmp_path: Path) -> Path:
    """A two-socket server's tree as Linux lists it, flat: packages, their parts, DRAM,
    a laptop's platform zone, and the MMIO copy of a package."""
    root = tmp_path / "powercap"
    zone(root, "intel-rapl:0", "package-0", 1_000_000)
    zone(root, "intel-rapl:0:0", "core", 500_000)
    zone(root, "intel-rapl:0:1", "dram", 200_000)
    zone(root, "intel-rapl:1", "package-1", 3_000_000)
    zone(root, "intel-rapl:2", "psys", 9_000_000)
    zone(root, "intel-rapl-mmio:0", "package-0", 1_000_000)
    return root


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def advance(root: Path, **joules: float) -> None:
    """Add joules to the named zones' counters (`intel_rapl_0=…`), wrapping as RAPL does."""
    for name, j in joules.items():
        counter = root / name.replace("_", "-", 1).replace("_", ":") / "energy_uj"
        counter.write_text(f"{(int(counter.read_text()) + round(j * 1e6)) % MAX_RANGE}\n")


def measured(counters: dict[str, float], device: str = "cpu",
             samples: tuple[float, ...] = (0.01, 0.01, 0.01)) -> Measurement:
    return Measurement(Case("w", "correct", "numpy", device, "float32", 1), Status.OK,
                       samples=samples, counters=counters)


def window(watch: energy.CpuEnergy | energy.GpuEnergy, clock: Clock, seconds: float,
           calls: int, during: object = None) -> dict[str, float]:
    """One case's sampling window: the counters read at its start and end."""
    watch.case_started()
    watch.sampling_started()
    if callable(during):
        during()
    clock.t += seconds
    watch.sampling_ended(calls)
    return dict(watch.case_ended().counters)


def test_rapl_sums_the_packages_and_dram_and_leaves_out_their_parts(powercap: Path) -> None:
    found = rapl.domains(powercap)
    assert [(d.zone, d.kind) for d in found] == [
        ("intel-rapl:0", "package"), ("intel-rapl:0:1", "dram"), ("intel-rapl:1", "package")]
    clock = Clock()
    counters = window(energy.CpuEnergy(root=powercap, clock=clock), clock, 4.0, 400,
                      lambda: advance(powercap, intel_rapl_0=60.0, intel_rapl_1=40.0,
                                      **{"intel_rapl_0_1": 10.0, "intel_rapl_0_0": 30.0,
                                         "intel_rapl_2": 500.0}))
    assert counters[energy.CPU_PACKAGE_J] == pytest.approx(100.0)
    assert counters[energy.CPU_DRAM_J] == pytest.approx(10.0)
    figure = energy.of(measured(counters))
    assert figure is not None and figure.measured
    assert figure.per_call_j == pytest.approx(110.0 / 400)
    assert figure.watts == pytest.approx(110.0 / 4.0)
    assert figure.source.startswith("the package + DRAM from RAPL")


def test_a_counter_that_wraps_in_the_window_is_read_across_the_wrap(powercap: Path) -> None:
    (powercap / "intel-rapl:0" / "energy_uj").write_text(f"{MAX_RANGE - 2_000_000}\n")
    clock = Clock()
    counters = window(energy.CpuEnergy(root=powercap, clock=clock), clock, 4.5, 10,
                      lambda: advance(powercap, intel_rapl_0=5.0))
    assert int((powercap / "intel-rapl:0" / "energy_uj").read_text()) == 3_000_000
    assert counters[energy.CPU_PACKAGE_J] == pytest.approx(5.0)


def test_without_powercap_cpu_energy_is_not_readable_and_says_so(tmp_path: Path) -> None:
    clock = Clock()
    watch = energy.CpuEnergy(asked=True, root=tmp_path / "no-powercap", clock=clock)
    counters = window(watch, clock, 1.2, 100)
    m = measured(counters)
    assert energy.of(m) is None
    assert energy.why_none(m) == ("not readable here (no RAPL: no /sys/class/powercap, as in "
                                  "most VMs)")


@pytest.fixture
def root_only_powercap() -> Iterator[Path]:
    """A tree whose energy_uj no ordinary user may read (Linux has made it root's alone
    since 2020), in a directory anyone may enter."""
    base = Path(tempfile.mkdtemp(prefix="gpuvs-powercap-"))
    base.chmod(0o755)
    root = base / "powercap"
    z = zone(root, "intel-rapl:0", "package-0", 1_000_000)
    for p in (root, z):
        p.chmod(0o755)
    (z / "energy_uj").chmod(0o000)
    yield root
    shutil.rmtree(base)


def as_ordinary_user(read: Callable[[], int]) -> int:
    """`read()` in a forked child that has dropped root for `nobody`, where the tests run
    as root: root reads any file, whatever its mode."""
    if os.geteuid() != 0:
        return read()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop root, read, report, leave without pytest's teardown
        try:
            os.setuid(NOBODY)
            os.write(w, str(read()).encode())
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    with os.fdopen(r) as f:
        return int(f.read())


def test_a_counter_only_root_may_read_is_named_not_guessed(root_only_powercap: Path) -> None:
    def why() -> int:
        found = energy.cpu_microjoules(root_only_powercap)
        return int(found) if isinstance(found, energy.NoEnergy) else 0

    assert as_ordinary_user(why) == energy.NoEnergy.RAPL_ROOT
    assert "root's alone" in energy.NoEnergy.RAPL_ROOT.words


def test_a_short_window_gives_no_figure_and_says_so_only_where_energy_was_asked(
        powercap: Path) -> None:
    clock = Clock()
    assert window(energy.CpuEnergy(root=powercap, clock=clock), clock, 0.3, 10) == {}
    asked = window(energy.CpuEnergy(asked=True, root=powercap, clock=clock), clock, 0.3, 10)
    assert asked[energy.CPU_NONE] == energy.NoEnergy.SHORT_WINDOW
    assert energy.of(measured(asked)) is None
    assert "under 4 s" in (energy.why_none(measured(asked)) or "")


def test_a_declared_cpu_power_is_labelled_declared(tmp_path: Path) -> None:
    clock = Clock()
    counters = window(energy.CpuEnergy(asked=True, declared_w=150.0,
                                       root=tmp_path / "none", clock=clock), clock, 1.0, 50)
    figure = energy.of(measured(counters, samples=(0.02, 0.02, 0.02)))
    assert figure is not None and not figure.measured
    assert figure.per_call_j == pytest.approx(150.0 * 0.02)
    assert "declared" in figure.source and "not measured" in figure.source


def fake_nvml(readings_mj: list[int], counter: bool = True) -> SimpleNamespace:
    """An NVML whose energy counter reads the given values in turn."""
    values = iter(readings_mj)
    lib = SimpleNamespace(nvmlDeviceGetHandleByPciBusId=lambda bus: "h",
                          nvmlDeviceGetHandleByIndex=lambda i: "h")
    if counter:
        lib.nvmlDeviceGetTotalEnergyConsumption = lambda h: next(values)
    return lib


def test_gpu_energy_per_call_total_above_idle_and_power() -> None:
    clock = Clock()
    nvml = fake_nvml([5_000_000, 5_000_000 + 3_500_000])  # 3500 J over the window
    watch = energy.GpuEnergy("cuda:0", idle_w=80.0, nvml=nvml, clock=clock)
    counters = window(watch, clock, energy.ENERGY_WINDOW_S, 1000)
    figure = energy.of(measured(counters, device="cuda:0"))
    assert figure is not None and figure.measured
    assert figure.per_call_j == pytest.approx(3.5)
    assert figure.watts == pytest.approx(3500 / energy.ENERGY_WINDOW_S)
    assert figure.above_idle_j == pytest.approx((3500 - 80 * energy.ENERGY_WINDOW_S) / 1000)
    assert 0 < figure.above_idle_j < figure.per_call_j  # type: ignore[operator]


def test_the_window_is_dated_so_another_power_log_can_be_lined_up_with_it() -> None:
    import time

    clock = Clock()
    watch = energy.GpuEnergy("cuda:0", nvml=fake_nvml([5_000_000, 5_400_000]), clock=clock)
    before = time.time()
    counters = window(watch, clock, energy.ENERGY_WINDOW_S, 10)
    assert before <= counters[energy.WINDOW_END] <= time.time()


def test_a_gpu_without_an_energy_counter_fails_soft() -> None:
    clock = Clock()
    watch = energy.GpuEnergy("cuda:0", asked=True, nvml=fake_nvml([], counter=False),
                             clock=clock)
    m = measured(window(watch, clock, 1.5, 10), device="cuda:0")
    assert energy.of(m) is None
    assert "no energy counter" in (energy.why_none(m) or "")


class SteppedCounter:
    """NVML's energy counter as an H100's moves: in steps every `period` s (the first at
    `phase`), each adding the energy drawn since the last, at `watts` until `busy_until`
    and `idle_w` after. Time is the test's clock; a read costs none."""

    def __init__(self, clock: Clock, watts: float, period: float = 0.1, phase: float = 0.037,
                 idle_w: float | None = None, busy_until: float = float("inf")) -> None:
        self.clock, self.watts, self.period, self.phase = clock, watts, period, phase
        self.idle_w, self.busy_until = (idle_w if idle_w is not None else watts), busy_until

    def joules_until(self, t: float) -> float:
        busy = min(t, self.busy_until)
        return self.watts * busy + self.idle_w * max(0.0, t - self.busy_until)

    def __call__(self, handle: object) -> int:
        steps = (self.clock.t - self.phase) // self.period
        return round(self.joules_until(self.phase + steps * self.period) * 1e3)

    def nvml(self) -> SimpleNamespace:
        lib = fake_nvml([])
        lib.nvmlDeviceGetTotalEnergyConsumption = self
        return lib


def sleeping(clock: Clock) -> Callable[[float], None]:
    def sleep(s: float) -> None:
        clock.t += s
    return sleep


def test_a_counter_that_steps_every_100_ms_is_off_by_at_most_a_step_over_the_window() -> None:
    """Why a figure needs ENERGY_WINDOW_S: a window whose start read a step 99.5 ms old
    and whose end read one just made counts a step too many, 10 % of a 1 s window and at
    most 2.5 % of a 4 s one."""
    for seconds, off in ((1.0006, 0.1), (4.0006, 0.025)):
        clock = Clock()
        counter = SteppedCounter(clock, watts=700.0, phase=0.0005)
        watch = energy.GpuEnergy("cuda:0", asked=True, nvml=counter.nvml(), clock=clock)
        counters = window(watch, clock, seconds, 1000)
        if seconds < energy.ENERGY_WINDOW_S:
            assert counters[energy.GPU_NONE] == energy.NoEnergy.SHORT_WINDOW
            continue
        measured_w = counters[energy.GPU_J] / counters[energy.WINDOW_S]
        assert measured_w == pytest.approx(700.0 * (1 + off), rel=2e-3)


def test_idle_power_is_the_counter_between_two_steps_and_no_wait_without_one() -> None:
    clock = Clock()
    counter = SteppedCounter(clock, watts=72.0, phase=0.061)
    assert energy.idle_watts("cuda:0", 1.0, counter.nvml(), sleeping(clock),
                             clock) == pytest.approx(72.0, rel=1e-3)
    waited: list[float] = []
    assert energy.idle_watts("cuda:0", 1.0, fake_nvml([], counter=False), waited.append,
                             clock) is None
    assert waited == []


@pytest.mark.gpu
def test_a_real_gpu_gives_energy_per_call_above_idle_below_the_total() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("pynvml")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import gpuvs

    x = torch.rand(4096, 4096, device="cuda")
    m = gpuvs.measure(lambda: x @ x, device="cuda", budget_s=0.2, energy=True)
    figure = energy.of(m)
    assert figure is not None, energy.why_none(m)
    assert m.counters[energy.WINDOW_S] >= energy.ENERGY_WINDOW_S
    assert figure.per_call_j > 0 and figure.idle_w is not None and figure.idle_w > 0
    assert figure.above_idle_j is not None and 0 < figure.above_idle_j < figure.per_call_j
