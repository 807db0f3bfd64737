"""One small validated case on the GPU machine (`pytest -m gpu`): the shipped profile of
this GPU predicts a memory-bound pass that gpuvs then measures."""

from __future__ import annotations

import pytest

from gpuvs.model import Case
from gpuvs.predicting import forecast, profile
from gpuvs.predicting.counting import count
from gpuvs.predicting.work import of_case

pytestmark = pytest.mark.gpu


def test_x_times_5_on_1e8_floats_lands_where_the_shipped_profile_predicts() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import gpuvs

    name = torch.cuda.get_device_name(0)
    shipped = [f for f in profile.available()
               if f.where == profile.SHIPPED and f.profile.device == name]
    if not shipped:
        pytest.skip(f"no profile of {name} ships with gpuvs yet")
    t = forecast.target(str(shipped[0].path))
    case = Case("elementwise", "correct", "torch", "cuda:0", "float32", 10**8,
                (("op", "scale"),))
    predicted = t.predict(of_case(case))
    assert predicted.estimate.dominant.term == "memory"
    x = torch.rand(10**8, device="cuda")

    def scale() -> object:
        x.mul_(5)
        return x

    m = gpuvs.measure(scale, device="cuda", budget_s=0.5)
    assert m.summary is not None
    if predicted.interval is not None:
        low, high = predicted.interval
        assert low <= m.summary.median <= high
    assert m.summary.median == pytest.approx(predicted.seconds, rel=0.25)


def test_a_profile_saved_here_is_found_by_its_name(tmp_path, monkeypatch) -> None:
    """`gpuvs ceilings --save-profile mygpu` on this GPU, then `gpuvs predict --target
    mygpu`, as the README says; and `--profile` with the path it printed."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from tests.helpers import invoke

    monkeypatch.setenv(profile.ENV_VAR, str(tmp_path / "profiles"))
    db = str(tmp_path / "r.sqlite")
    saved = invoke("ceilings", "-b", "numpy,torch", "--budget", "0.1", "--db", db,
                   "--save-profile", "mygpu")
    assert saved.exit_code == 0, saved.output
    path = tmp_path / "profiles" / "mygpu.json"
    assert f"saved profile {path}" in saved.output
    saved_classes = {c.op_class for c in profile.load_file(path).profile.op_classes}
    from gpuvs.model import OP_CLASSES
    assert saved_classes == set(OP_CLASSES)  # each class timed over its sizes
    for chosen in (["--target", "mygpu"], ["--profile", str(path)]):
        result = invoke("predict", "-w", "matmul", "-b", "torch", "-s", "1024", "-a",
                        "shape=square", *chosen, "--db", db)
        assert result.exit_code == 0, result.output
        assert "GPU predicted for mygpu" in result.output
        assert "TF32: torch's float32 products predicted at full float32" in result.output


@pytest.mark.parametrize("op", ["elementwise", "reduction", "scan", "sort", "topk", "unique",
                                "select", "gather", "scatter", "norm", "fft", "create",
                                "copy", "matmul", "conv", "attention", "to_device",
                                "to_host"])
def test_each_op_class_probe_runs_and_checks_on_this_gpu(op: str) -> None:
    """What `gpuvs ceilings` times for each class, at its smallest and largest sizes,
    answers as torch on the CPU does."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from gpuvs import backends, workloads
    from gpuvs.analysis.ceilings import OP_CLASS_ELEMENTS, OP_CLASS_SIZES
    from gpuvs.measuring.criteria import FixedCount
    from gpuvs.measuring.protocol import measure
    from gpuvs.model import Status

    sizes = OP_CLASS_SIZES.get(op, OP_CLASS_ELEMENTS)
    for size in (sizes[0], sizes[-1]):
        case = Case("op_class", "correct", "torch", "cuda:0", "float32", size, (("op", op),))
        b = backends.get("torch")
        m = measure(workloads.get("op_class").prepare(b, case), case, b.clock("cuda:0"),
                    FixedCount(n=3))
        assert m.status is Status.OK, m.reason


def test_an_rms_norm_launches_the_one_kernel_the_counting_counts() -> None:
    """The counting takes `F.rms_norm` for one kernel on CUDA, though the CPU runs six ops
    (`counting._fused_on_gpu`): torch's profiler, here in a test process that times
    nothing, holds it to what CUDA launches."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as profiled

    x, w = torch.randn(16, 1024), torch.rand(1024)
    work, _ = count(lambda x, w: F.rms_norm(x, (1024,), w), (x, w), {})
    cx, cw = x.cuda(), w.cuda()
    F.rms_norm(cx, (1024,), cw)  # its first call alone: nothing loaded in the profile
    torch.cuda.synchronize()
    with profiled(activities=[ProfilerActivity.CUDA]) as prof:
        F.rms_norm(cx, (1024,), cw)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    assert len(kernels) == work.launches == 1
