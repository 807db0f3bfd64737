"""Seed 003's CNN: the post's Keras model and its PyTorch twin, the training step's check,
the as_written fit replay, and the cases that exist. Small batches keep CPU steps short."""

from __future__ import annotations

import importlib.util
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from tests.helpers import measured_and_observed
from tests.workloads.test_cifar import make_archive

from gpuvs import backends, workloads
from gpuvs.errors import BackendUnavailable, WrongResult
from gpuvs.execute.wire import Observe, Sampling, Take
from gpuvs.model import Case, Status
from gpuvs.workloads import cnn
from gpuvs.workloads.cifar import synthetic

torch = pytest.importorskip("torch")
SYNTHETIC = ("dataset", "synthetic")
FAST = Sampling(0.02, "fixed:n=3")


def _case(variant: str = "correct", framework: str = "torch", size: int = 4,
          device: str = "cpu", *extra: tuple[str, str]) -> Case:
    params = tuple(sorted((SYNTHETIC, ("framework", framework), *extra)))
    return Case("cnn", variant, "torch", device, "float32", size, params)


def needs_keras() -> object:
    """keras on torch, or a skip (importorskip would import it on its default backend)."""
    if importlib.util.find_spec("keras") is None:
        pytest.skip("keras is not installed")
    return cnn.keras_on_torch()


def _run(case: Case) -> object:
    from gpuvs.execute.worker import run_case
    m, fatal = run_case(backends.get("torch"), Take(case, FAST))
    assert not fatal
    return m


def test_the_keras_model_has_the_posts_975692_parameters() -> None:
    needs_keras()
    model = cnn.post_keras_model(cnn.keras_on_torch())
    assert model.count_params() == 975_692 == cnn.POST_PARAMETERS


def test_the_torch_twin_has_the_same_parameters_layer_for_layer() -> None:
    twin = cnn.torch_twin()
    assert sum(p.numel() for p in twin.parameters()) == 975_692 == cnn.parameter_count()
    assert [tuple(p.shape) for p in twin.parameters()][:2] == [(128, 3, 7, 7), (128,)]


def test_keras_and_torch_compute_the_same_function_from_the_same_weights() -> None:
    keras = needs_keras()
    with keras.device("cpu"):
        model = cnn.post_keras_model(keras)
    twin = cnn.torch_twin().eval()
    with torch.no_grad():
        for p, w in zip(twin.parameters(), model.get_weights(), strict=True):
            p.copy_(torch.from_numpy(np.ascontiguousarray(cnn.keras_to_torch_layout(w))))
    x = synthetic(6).x
    with keras.device("cpu"):
        probs = np.asarray(model(cnn.scaled(x), training=False).detach())
    mine = torch.softmax(twin(torch.from_numpy(cnn.scaled(x, "nchw"))), dim=1)
    np.testing.assert_allclose(mine.detach().numpy(), probs, rtol=1e-4, atol=1e-6)


def test_the_cost_model_follows_the_layers() -> None:
    # conv 7×7 on 26×26×128, 3×3 on 11×11×256 and 9×9×256, then 256·200 and 200·100.
    forward = 2 * (26 * 26 * 128 * 49 * 3 + 11 * 11 * 256 * 9 * 128 + 9 * 9 * 256 * 9 * 256
                   + 256 * 200 + 200 * 100)
    assert cnn.forward_flops_per_image() == forward
    w = workloads.get("cnn")
    assert w.flops(32, ()) == 3 * 32 * forward
    assert w.memory_needed(256, (), "float32") > w.memory_needed(32, (), "float32") > 2**28


def test_an_epoch_is_keras_1329_steps() -> None:
    assert cnn.steps_per_epoch(32) == 1329 and cnn.steps_per_epoch(256) == 167
    for steps in (1, 4, 30, 300):
        n = cnn.images_for_steps(steps, 32)
        assert cnn.steps_per_epoch(32, n) == steps
        assert math.floor((n - 1) * 0.85) < steps * 32  # the fewest images that do


@pytest.mark.parametrize("framework", ["torch", "keras"])
def test_a_correct_cpu_step_runs_through_the_worker(framework: str) -> None:
    if framework == "keras":
        needs_keras()
    m = _run(_case(framework=framework))
    assert m.status is Status.OK, m.reason
    # A step longer than the test's budget (a slow CI machine) takes two samples, else three.
    assert m.first_call_s is not None and m.loops == 1 and len(m.samples) >= 2
    assert m.counters["flops"] == 3 * 4 * cnn.forward_flops_per_image()
    # The load is a part of the step, timed alone apart from the samples, after them.
    from gpuvs.execute.observe import observe
    parts = observe(backends.get("torch"),
                    Observe(_case(framework=framework), "parts", FAST))
    assert parts["load_s"] > 0


def test_as_written_replays_fit_and_records_what_it_ran() -> None:
    needs_keras()
    m = _run(_case("as_written", "keras", 8, "cpu", ("steps", "2")))
    assert m.status is Status.OK, m.reason
    assert m.timer.startswith("%%timeit -n1 -r1 around model.fit")
    c = m.counters
    assert c["steps"] == 2 and c["images"] == cnn.images_for_steps(2, 8)
    assert m.samples == pytest.approx((c["fit_s"] / 2,))
    assert {"epoch1_s", "epoch1_train_acc", "epoch1_val_acc"} <= set(c)


def test_epochs_train_on_the_whole_set_and_record_each_epoch(monkeypatch) -> None:
    needs_keras()
    monkeypatch.setattr(cnn, "TRAIN_IMAGES", 60)  # the real 50,000 would take hours here
    m = _run(_case("as_written", "keras", 8, "cpu", ("epochs", "2")))
    assert m.status is Status.OK, m.reason
    c = m.counters
    assert c["epochs"] == 2 and c["steps"] == 2 * cnn.steps_per_epoch(8, 60)
    assert c["epoch2_s"] > 0 and 0 <= c["epoch2_val_acc"] <= 1


def test_real_cifar_data_is_read_from_the_archive(tmp_path: Path) -> None:
    path, _, _ = make_archive(tmp_path)
    case = _case("correct", "torch", 4, "cpu", ("cifar_path", str(path)))
    case = replace(case, params=tuple(sorted(
        [p for p in case.params if p[0] != "dataset"] + [("dataset", "cifar100")])))
    assert cnn.dataset(case, 8).source == "CIFAR-100 train"
    assert _run(case).status is Status.OK


def test_a_healthy_step_passes_its_check_and_leaves_training_as_it_was() -> None:
    trainer = cnn.torch_trainer(_case())
    batch = synthetic(4, seed=1)
    before = trainer.weights()
    check = cnn.checker(trainer, trainer.state(), (batch.x, batch.y), "float32")
    check(trainer.step(*trainer.to_device(batch.x, batch.y)))
    assert trainer.model.training  # dropout back on
    assert all(np.array_equal(a, b) for a, b in zip(before, trainer.weights(), strict=True))


@pytest.mark.parametrize(("broken", "message"), [
    ("loss", "differs from the float64 reference"),
    ("grads", "gradients are off the float64 reference"),
    ("no_update", "did not fall"),
    ("nan", "NaN or infinite"),
])
def test_a_wrong_training_step_is_caught(broken: str, message: str) -> None:
    trainer = cnn.torch_trainer(_case())

    def frozen(x: object, y: object) -> float:  # a step that forgets the optimizer
        loss = torch.nn.functional.cross_entropy(trainer.model(x), y)
        trainer.model.zero_grad()
        loss.backward()
        return float(loss.detach())

    fault = {"loss": {"fresh_step": lambda x, y: 1.1 * trainer.fresh_step(x, y)},
             "grads": {"grads": lambda: [1.5 * g for g in trainer.grads()]},
             "no_update": {"fresh_step": frozen}, "nan": {}}[broken]
    images = synthetic(4, seed=1)
    check = cnn.checker(replace(trainer, **fault), trainer.state(), (images.x, images.y),
                        "float32")
    with pytest.raises(WrongResult, match=message):
        check(torch.tensor(float("nan")) if broken == "nan" else torch.tensor(4.6))


def test_a_wrong_result_is_a_wrong_result_status(monkeypatch) -> None:
    real = cnn.reference_loss_and_grads
    monkeypatch.setattr(cnn, "reference_loss_and_grads",
                        lambda w, x, y: (real(w, x, y)[0] + 0.5, real(w, x, y)[1]))
    m = _run(_case())
    assert m.status is Status.WRONG_RESULT and "float64 reference" in m.reason


def test_without_keras_the_case_is_skipped_with_the_install_line(monkeypatch) -> None:
    monkeypatch.setattr(cnn.importlib.util, "find_spec",
                        lambda name, *a: None if name == "keras" else object())
    with pytest.raises(BackendUnavailable, match=r"pip install 'gpuvs\[keras\]'"):
        cnn.keras_on_torch()
    m = _run(_case(framework="keras"))
    assert m.status is Status.SKIPPED
    assert m.reason == "keras is not installed (pip install 'gpuvs[keras]')"


def test_keras_on_another_backend_is_refused_clearly(monkeypatch) -> None:
    keras = needs_keras()
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    with pytest.raises(BackendUnavailable, match="imported with the jax backend"):
        cnn.keras_on_torch()


def test_a_batch_too_large_for_memory_is_skipped_before_allocating() -> None:
    m = _run(_case(size=10**7))
    assert m.status is Status.SKIPPED and m.reason.startswith("needs ")


@pytest.mark.parametrize(("variant", "framework", "size", "device", "extra", "exists"), [
    ("as_written", "keras", 32, "cpu", (), True),
    ("as_written", "keras", 32, "cuda:0", (("steps", "9"),), True),
    ("as_written", "keras", 256, "cuda:0", (), False),     # the post ran batch 32
    ("as_written", "torch", 32, "cpu", (), False),         # the post ran Keras
    ("correct", "keras", 256, "cuda:0", (), True),
    ("correct", "torch", 32, "cpu", (("compile", "on"),), False),
    ("correct", "torch", 32, "cpu", (("steps", "9"),), False),  # fit's length only
    ("tuned", "torch", 256, "cuda:0", (("compile", "on"),), True),
    ("tuned", "torch", 256, "cpu", (), False),             # bf16 + channels-last: GPUs
    ("tuned", "keras", 256, "cuda:0", (), False),
])
def test_which_cases_exist(variant: str, framework: str, size: int, device: str,
                           extra: tuple[tuple[str, str], ...], exists: bool) -> None:
    case = _case(variant, framework, size, device, *extra)
    assert workloads.get("cnn").applies(case) is exists
    assert not workloads.get("cnn").applies(replace(case, backend="numpy"))


def test_a_plain_run_plans_keras_torch_and_tuned_cases() -> None:
    from gpuvs import config
    from gpuvs.execute import plan
    cases = plan.expand(config.build({"workloads": ("cnn",), "devices": ("cpu", "cuda"),
                                      "variants": ("as_written", "correct", "tuned")}))
    assert {(c.variant, c.param("framework"), c.device, c.size) for c in cases
            if c.variant == "as_written"} == {("as_written", "keras", d, 32)
                                              for d in ("cpu", "cuda:0")}
    assert {c.param("dataset") for c in cases} == {"synthetic"}
    assert {c.param("compile", "off") for c in cases if c.variant == "tuned"} == {"off", "on"}


def test_the_tuned_step_trains_correctly_on_the_cpu_too() -> None:
    """tuned runs on CUDA only, but its step (bf16 autocast, channels-last) is checked
    here where CI can: within the bf16 tolerances of the float64 reference."""
    prepared = workloads.get("cnn").prepare(backends.get("torch"),
                                            _case("tuned", "torch", 4))
    prepared.check(prepared.call())


@pytest.mark.gpu
@pytest.mark.parametrize(("variant", "framework", "size", "extra"), [
    ("correct", "torch", 32, ()),
    ("correct", "keras", 32, ()),
    ("as_written", "keras", 32, (("steps", "40"),)),
    ("correct", "torch", 256, ()),
    ("tuned", "torch", 256, ()),
    ("tuned", "torch", 256, (("compile", "on"),)),
])
def test_gpu_cases_run_and_pass_their_checks(variant: str, framework: str, size: int,
                                             extra: tuple[tuple[str, str], ...]) -> None:
    if framework == "keras":
        needs_keras()
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    case = _case(variant, framework, size, "cuda:0", *extra)
    m = measured_and_observed([case])[case.key]  # kernels are profiled after the timing
    assert m.status is Status.OK, m.reason
    assert m.timer == ("cuda_events" if variant != "as_written" else m.timer)
    if variant != "as_written":
        assert m.counters["kernels"] > 10 and m.counters["load_s"] > 0
