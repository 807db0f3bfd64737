"""Training seed 003's CNN on CIFAR-100-shaped images: Keras on torch, and plain PyTorch.

The post's network (`post_keras_model`, 975,692 parameters): Conv2D(128, 7×7) →
MaxPooling2D(2) → Conv2D(256, 3×3) → Conv2D(256, 3×3) → GlobalAveragePooling2D →
Flatten → Dense(200) → Dropout(0.5) → Dense(100, softmax), Adam, categorical
cross-entropy. `torch_twin` is the same network in plain PyTorch, with Keras'
initialisers. `size` is the batch size (the post's: Keras' default, 32).

Variants:
- `as_written`: the post's `%%timeit -n1 -r1` around `model.fit(x, y,
  validation_split=0.15)` on `x / 255.0` (float64, as the post had it), for `steps`
  training steps in one epoch — or, with `epochs=N`, the real training, epoch by epoch.
  Its sample is the fit's seconds ÷ its training steps: first steps, validation and
  the data pipeline included, as in the post's epoch times.
- `correct`: one optimizer step (forward, loss, backward, Adam) on a batch already on the
  device — for Keras, the `train_function` that `fit` calls per step, without `fit`'s
  per-step copy of the logs to the host. Loading a batch (uint8 host images → float32
  on the device) is timed apart (`load_s`); the first step is `first_call_s`.
- `tuned` (CUDA): plain PyTorch with bf16 autocast, channels-last, fused Adam, cuDNN
  autotuning, uint8 uploads from pinned memory, and `torch.compile` with `compile=on`.

The check trains outside any timed region: from the initial weights, with dropout off,
one step's loss and gradients must match a float64 CPU recomputation, and the loss on
that batch must fall over the next steps.
"""

from __future__ import annotations

import copy
import importlib.util
import itertools
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gpuvs.backends.base import Backend
from gpuvs.errors import BackendUnavailable, UsageError, WrongResult
from gpuvs.measuring.as_written import SelfTimed
from gpuvs.measuring.protocol import Prepared
from gpuvs.model import Case, Params, on_gpu
from gpuvs.workloads import register
from gpuvs.workloads.base import TOLERANCE, SizeAxis, Workload, relative_error, with_others
from gpuvs.workloads.cifar import (
    CLASSES,
    PIXELS,
    TRAIN_IMAGES,
    VALIDATION_SPLIT,
    Images,
    dataset,
    images_for_steps,
    one_hot,
    scaled,
    steps_per_epoch,
)

POST_PARAMETERS = 975_692
POST_BATCH = 32
TUNED_BATCH = 256
# (in channels, out channels, kernel side) of each Conv2D; (in, out) of each Dense.
CONVS = ((3, 128, 7), (128, 256, 3), (256, 256, 3))
DENSES = ((256, 200), (200, 100))
DROPOUT = 0.5
LEARNING_RATE = 1e-3   # Keras' Adam defaults, used by the torch twin too
ADAM_EPSILON = 1e-7
SEED = 3
# Batches kept on the device and taken in turn by the timed steps.
DEVICE_BATCHES = 4
# Steps on one batch after the checked one: the loss must have fallen by then.
DESCENT_STEPS = 2
# ‖grad − ref‖ / ‖ref‖ allowed. Rounded activations send some ReLUs and max-pool ties
# the other way, each moving a gradient term. Measured on an H100 with TF32 convolutions
# (PyTorch's cuDNN default): 2.6e-3 plain, 1.9e-2 through Keras; bf16 autocast: 2–6e-2
# (H100 and CPU). These allow 3× that; a wrong backward pass is off by order 1.
GRADIENT_TOLERANCE = {"float32": 6e-2, "bfloat16": 0.2}
# Training steps an as_written step run fits for, by device kind, unless `steps=N`.
DEFAULT_STEPS = {"cpu": 8, "cuda": 200}
# Device bytes: weights, gradients and Adam's two moments; activations kept for backward,
# their gradients and Keras' layout copies (3 × the forward's); cuDNN's workspace.
STATE_COPIES = 4
ACTIVATION_COPIES = 3
WORKSPACE_BYTES = 256 * 1024**2
# Ops one step dispatches (the profiler counts the real kernels on CUDA and replaces this).
LAUNCHES = {"torch": 40, "keras": 120}

def _feature_sides() -> list[int]:
    """Output side of each conv: 32 → 26, pooled to 13 → 11 → 9."""
    side, sides = 32, []
    for i, (_, _, k) in enumerate(CONVS):
        side = side - k + 1
        sides.append(side)
        if i == 0:
            side //= 2
    return sides


def forward_flops_per_image() -> float:
    convs = sum(2.0 * s * s * out * k * k * cin for s, (cin, out, k) in
                zip(_feature_sides(), CONVS, strict=True))
    return convs + sum(2.0 * a * b for a, b in DENSES)


def parameter_count() -> int:
    return (sum(k * k * cin * out + out for cin, out, k in CONVS)
            + sum(a * b + b for a, b in DENSES))


def keras_on_torch() -> Any:
    """keras, imported on the torch backend; BackendUnavailable (→ SKIPPED) otherwise."""
    if importlib.util.find_spec("keras") is None:
        raise BackendUnavailable("keras is not installed (pip install 'gpuvs[keras]')")
    if "keras" not in sys.modules:
        os.environ["KERAS_BACKEND"] = "torch"  # as the post does, before the import
    import keras

    if keras.backend.backend() != "torch":
        raise BackendUnavailable(
            f"keras was imported with the {keras.backend.backend()} backend before gpuvs "
            "could choose torch; seed 003 runs Keras on torch (KERAS_BACKEND=torch)")
    return keras


def post_keras_model(keras: Any) -> Any:
    """The post's Sequential model, argument for argument; its parameter count asserted."""
    from keras import Input, layers, models

    model = models.Sequential([
        Input(shape=(32, 32, 3)),
        layers.Conv2D(128, kernel_size=(7, 7), activation="relu", kernel_initializer="he_normal"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(256, kernel_size=(3, 3), activation="relu", kernel_initializer="he_normal"),
        layers.Conv2D(256, kernel_size=(3, 3), activation="relu", kernel_initializer="he_normal"),
        layers.GlobalAveragePooling2D(),
        layers.Flatten(),
        layers.Dense(200, activation="relu", kernel_initializer="he_normal"),
        layers.Dropout(0.5),
        layers.Dense(100, activation="softmax"),
    ])
    if (n := model.count_params()) != POST_PARAMETERS:
        raise WrongResult(f"the Keras model has {n:,} parameters; the post's has "
                          f"{POST_PARAMETERS:,} (keras {keras.__version__})")
    return model


def torch_twin(dtype: str = "float32", initialise: bool = True) -> Any:
    """The post's network as a torch.nn.Module on the CPU, NCHW in, logits out; with
    Keras' initialisers unless weights are about to be copied in."""
    import torch
    from torch import nn

    class PostCnn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.convs = nn.ModuleList(nn.Conv2d(i, o, k) for i, o, k in CONVS)
            self.fc1, self.fc2 = (nn.Linear(a, b) for a, b in DENSES)
            self.drop = nn.Dropout(DROPOUT)

        def forward(self, x: Any) -> Any:
            relu = torch.relu
            h = nn.functional.max_pool2d(relu(self.convs[0](x)), 2)
            h = relu(self.convs[2](relu(self.convs[1](h))))
            return self.fc2(self.drop(relu(self.fc1(h.mean(dim=(2, 3))))))

    model = PostCnn().to(getattr(torch, dtype))
    if not initialise:
        return model
    with torch.no_grad():  # Keras' initialisers: he_normal (truncated), glorot_uniform
        for layer in (*model.convs, model.fc1):
            std = math.sqrt(2.0 / (layer.weight[0].numel())) / 0.87962566103423978
            nn.init.trunc_normal_(layer.weight, std=std, a=-2 * std, b=2 * std)
            nn.init.zeros_(layer.bias)
        nn.init.xavier_uniform_(model.fc2.weight)
        nn.init.zeros_(model.fc2.bias)
    return model


def keras_to_torch_layout(a: np.ndarray) -> np.ndarray:
    """A Keras kernel in torch's layout: (kh, kw, in, out) → (out, in, kh, kw); (in, out)
    → (out, in). Biases are the same in both."""
    if a.ndim == 4:
        return a.transpose(3, 2, 0, 1)
    return a.T if a.ndim == 2 else a


@dataclass(frozen=True)
class Trainer:
    """One framework's training step on one device, and what the check needs from it.
    Weights and gradients come out in torch's layout, float64."""

    step: Callable[[Any, Any], Any]          # a device batch → this step's loss (async)
    fresh_step: Callable[[Any, Any], float]  # the same step → the loss of this batch alone
    to_device: Callable[[np.ndarray, np.ndarray], tuple[Any, Any]]  # uint8 NHWC, labels
    state: Callable[[], Any]
    load: Callable[[Any], None]
    dropout: Callable[[bool], None]
    weights: Callable[[], list[np.ndarray]]
    grads: Callable[[], list[np.ndarray]]
    model: Any = None
    # A uint8 batch as the loader would hold it before `to_device` (pinned, for tuned).
    host_form: Callable[[np.ndarray, np.ndarray], tuple[Any, Any]] = lambda x, y: (x, y)


def keras_trainer(case: Case) -> Trainer:
    keras = keras_on_torch()
    import torch

    device = case.device
    keras.backend.clear_session()
    keras.utils.set_random_seed(SEED)
    with keras.device(device):  # the explicit device: the post's third way to pick one
        model = post_keras_model(keras)
        model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
        model.optimizer.build(model.trainable_variables)
        model.make_train_function()
    drop = next(la for la in model.layers if isinstance(la, keras.layers.Dropout))
    opt = model.optimizer

    def step(x: Any, y: Any) -> Any:
        with keras.device(device):  # tensors Keras makes itself land here too
            return model.train_function([(x, y)])["loss"]

    def fresh_step(x: Any, y: Any) -> float:
        model.reset_metrics()  # the returned loss is a running mean since the last reset
        return float(step(x, y))

    def to_device(x: np.ndarray, y: np.ndarray) -> tuple[Any, Any]:
        return (torch.from_numpy(scaled(x, "nhwc")).to(device),
                torch.from_numpy(one_hot(y)).to(device))

    def load(s: Any) -> None:
        model.set_weights(s[0])
        for v, a in zip(opt.variables, s[1], strict=True):
            v.assign(a)

    return Trainer(
        step, fresh_step, to_device,
        state=lambda: (model.get_weights(), [np.array(v.numpy()) for v in opt.variables]),
        load=load, dropout=lambda on: setattr(drop, "rate", DROPOUT if on else 0.0),
        weights=lambda: [keras_to_torch_layout(a).astype(np.float64)
                         for a in model.get_weights()],
        grads=lambda: [keras_to_torch_layout(v.value.grad.detach().double().cpu().numpy())
                       for v in model.trainable_weights],
        model=model)


def torch_trainer(case: Case) -> Trainer:
    import torch

    device, tuned = case.device, case.variant == "tuned"
    cuda = on_gpu(device)
    torch.manual_seed(SEED)
    model = torch_twin().to(device)
    if tuned:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE, eps=ADAM_EPSILON,
                           fused=tuned and cuda or None)
    net = torch.compile(model) if case.param("compile") == "on" else model
    kind = device.partition(":")[0]
    cudnn = torch.backends.cudnn

    def step(x: Any, y: Any) -> Any:
        before = cudnn.benchmark
        cudnn.benchmark = tuned  # autotune the convolutions for this fixed shape
        try:
            with torch.autocast(kind, dtype=torch.bfloat16, enabled=tuned):
                loss = torch.nn.functional.cross_entropy(net(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        finally:
            cudnn.benchmark = before
        return loss.detach()

    def to_device(x: Any, y: Any) -> tuple[Any, Any]:
        if not tuned:
            return (torch.from_numpy(scaled(x, "nchw")).to(device),
                    torch.from_numpy(y).to(device))
        # uint8 is a quarter of float32's bytes; NHWC permuted is channels-last already.
        xd = torch.as_tensor(x).to(device, non_blocking=True).permute(0, 3, 1, 2)
        return (xd.float().div_(255.0).contiguous(memory_format=torch.channels_last),
                torch.as_tensor(y).to(device, non_blocking=True))

    def host_form(x: np.ndarray, y: np.ndarray) -> tuple[Any, Any]:
        if tuned and cuda:  # pinned once, as DataLoader(pin_memory=True) hands batches
            return torch.from_numpy(x).pin_memory(), torch.from_numpy(y).pin_memory()
        return x, y

    def load(s: Any) -> None:
        model.load_state_dict(s[0])
        opt.load_state_dict(s[1])

    return Trainer(
        step, lambda x, y: float(step(x, y)), to_device,
        state=lambda: (copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict())),
        load=load, dropout=model.train,
        weights=lambda: [p.detach().double().cpu().numpy() for p in model.parameters()],
        grads=lambda: [p.grad.detach().double().cpu().numpy() for p in model.parameters()],
        model=model, host_form=host_form)


def reference_loss_and_grads(weights: list[np.ndarray], x: np.ndarray, y: np.ndarray
                             ) -> tuple[float, list[np.ndarray]]:
    """Cross-entropy and its gradients in float64 on the CPU, dropout off."""
    import torch

    twin = torch_twin("float64", initialise=False).eval()
    with torch.no_grad():
        for p, w in zip(twin.parameters(), weights, strict=True):
            p.copy_(torch.from_numpy(np.ascontiguousarray(w)))
    logits = twin(torch.from_numpy(scaled(x, "nchw")).double())
    loss = torch.nn.functional.cross_entropy(logits, torch.from_numpy(y))
    loss.backward()
    return float(loss.detach()), [p.grad.numpy() for p in twin.parameters()]


def checker(trainer: Trainer, initial: Any, batch: tuple[np.ndarray, np.ndarray],
            precision: str) -> Callable[[object], None]:
    """Check a training step against float64 arithmetic, from the initial weights."""
    weights = trainer.weights()

    def check(out: object) -> None:
        if not math.isfinite(float(out)):  # type: ignore[arg-type]
            raise WrongResult("a training step's loss is NaN or infinite")
        trainer.load(initial)
        trainer.dropout(False)  # the reference cannot draw the same dropout mask
        try:
            x, y = trainer.to_device(*batch)
            loss = trainer.fresh_step(x, y)
            grads = np.concatenate([g.ravel() for g in trainer.grads()])
            later = [trainer.fresh_step(x, y) for _ in range(DESCENT_STEPS)]
        finally:
            trainer.dropout(True)
            trainer.load(initial)
        ref, ref_grads = reference_loss_and_grads(weights, *batch)
        if abs(loss - ref) > TOLERANCE[precision] * abs(ref):
            raise WrongResult(f"one step's loss {loss:.6g} differs from the float64 "
                              f"reference {ref:.6g} by more than {TOLERANCE[precision]:.0e}")
        err = relative_error(grads, np.concatenate([g.ravel() for g in ref_grads]))
        if err > GRADIENT_TOLERANCE[precision]:
            raise WrongResult(f"gradients are off the float64 reference by {err:.2e} "
                              f"(allowed {GRADIENT_TOLERANCE[precision]:.0e})")
        if not later[-1] < loss:
            raise WrongResult(f"the loss on one batch did not fall over {DESCENT_STEPS} more "
                              f"steps ({loss:.4f} → {later[-1]:.4f}): the step does not train")

    return check


def _sync(device: str) -> None:
    if on_gpu(device):
        import torch

        torch.cuda.synchronize(device)


def fit_replay(trainer: Trainer, case: Case, images: Images, epochs: int,
               recorded: dict[str, float]) -> SelfTimed:
    """The post's cell: `%%timeit -n1 -r1` around `model.fit(...)`; per training step."""
    keras = keras_on_torch()
    x, y = images.x / 255.0, keras.utils.to_categorical(images.y, CLASSES)  # float64
    train_steps = epochs * steps_per_epoch(case.size, len(images))

    class EpochRecorder(keras.callbacks.Callback):  # type: ignore[misc,name-defined]
        """gpuvs' observer: epoch times (synchronised) and accuracies, as counters."""

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            _sync(case.device)
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            _sync(case.device)
            recorded[f"epoch{epoch + 1}_s"] = time.perf_counter() - self.t0
            for key, name in (("accuracy", "train_acc"), ("val_accuracy", "val_acc"),
                              ("loss", "loss"), ("val_loss", "val_loss")):
                if key in (logs or {}):
                    recorded[f"epoch{epoch + 1}_{name}"] = float(logs[key])

    def fit() -> Any:
        with keras.device(case.device):
            return trainer.model.fit(x, y, batch_size=case.size, epochs=epochs,
                                     validation_split=VALIDATION_SPLIT,
                                     callbacks=[EpochRecorder()])

    def run() -> tuple[list[float], object]:
        s = time.perf_counter()  # %%timeit -n1 -r1: one run of one loop, no sync
        history = fit()
        fit_s = time.perf_counter() - s
        recorded.update(fit_s=fit_s, steps=float(train_steps), epochs=float(epochs),
                        images=float(len(images)))
        return [fit_s / train_steps], history.history["loss"][-1]

    return SelfTimed("%%timeit -n1 -r1 around model.fit, ÷ its training steps", run)


def _activation_floats() -> int:
    """Floats one image's forward keeps: each conv's output, the pooled map, the denses'."""
    sides = _feature_sides()
    convs = sum(s * s * out for s, (_, out, _) in zip(sides, CONVS, strict=True))
    return convs + (sides[0] // 2) ** 2 * CONVS[0][1] + sum(b for _, b in DENSES)


def _int_param(case_params: Params, name: str, default: int) -> int:
    raw = dict(case_params).get(name, str(default))
    if not raw.isdigit() or int(raw) < 1:
        raise UsageError(f"{name}={raw!r}: expected a whole number from 1")
    return int(raw)


@register
class Cnn(Workload):
    name = "cnn"
    counts_kernels = True
    description = ("seed 003: training the post's CIFAR-100 CNN (975,692 parameters), Keras "
                   "on torch and plain PyTorch; size = batch")
    variants = ("as_written", "correct", "tuned")
    matrix_units = True

    def param_sets(self) -> tuple[Params, ...]:
        data = ("dataset", "synthetic")
        return ((data, ("framework", "keras")), (data, ("framework", "torch")),
                (("compile", "on"), data, ("framework", "torch")))

    def data_modes(self, params: Params) -> tuple[str, ...]:
        return ("resident",)  # loading a batch is timed apart, as the `load` part

    def default_sizes(self, params: Params) -> tuple[int, ...]:
        return (POST_BATCH, TUNED_BATCH)

    def applies(self, case: Case) -> bool:
        framework = case.param("framework", "torch")
        if case.backend != "torch" or case.param("cache") == "cold":
            return False
        if case.variant == "as_written":  # what the post ran: Keras' fit at batch 32
            return framework == "keras" and case.size == POST_BATCH
        if {"steps", "epochs"} & set(dict(case.params)):
            return False  # fit's own run lengths belong to the replay
        if case.variant == "tuned":
            return framework == "torch" and on_gpu(case.device)
        return case.param("compile", "off") == "off"

    def flops(self, size: int, params: Params) -> float:
        """A training step ≈ 3 forwards (the backward computes two products per forward one)."""
        return 3.0 * forward_flops_per_image() * size

    def launches(self, params: Params) -> int:
        return LAUNCHES[dict(params).get("framework", "torch")]

    def memory_needed(self, size: int, params: Params, dtype: str) -> int:
        return (STATE_COPIES * 4 * POST_PARAMETERS + ACTIVATION_COPIES * 4 * size
                * _activation_floats() + DEVICE_BATCHES * size * PIXELS * 4 + WORKSPACE_BYTES)

    def host_memory_needed(self, size: int, params: Params, dtype: str) -> int:
        """The images as uint8, as the post's float64 `x / 255.0` and float64 one-hot
        labels; a decoded CIFAR archive besides when the data is real."""
        p = dict(params)
        n = TRAIN_IMAGES if "epochs" in p else max(
            images_for_steps(_int_param(params, "steps", max(DEFAULT_STEPS.values())), size),
            DEVICE_BATCHES * size)
        archive = 2 * TRAIN_IMAGES * PIXELS if p.get("dataset") == "cifar100" else 0
        return n * (9 * PIXELS + 8 * CLASSES) + archive

    def title(self, params: Params) -> str:
        p = dict(params)
        how = {"keras": "Keras on torch", "torch": "PyTorch"}.get(p.get("framework", "torch"),
                                                                   p.get("framework", ""))
        if p.get("compile") == "on":
            how += " compiled"
        data = {"cifar100": "CIFAR-100", "synthetic": "synthetic images"}.get(
            p.get("dataset", ""), "")
        name = f"Training seed 003's CNN, {how}" + (f", on {data}" if data else "")
        if "epochs" in p:
            name += f", fit() for {p['epochs']} epoch(s)"
        elif "steps" in p:
            name += f", fit() for {p['steps']} steps"
        return with_others(name, params, ("framework", "compile", "dataset", "cifar_path",
                                          "epochs", "steps"))

    def size_axis(self, params: Params) -> SizeAxis:
        return SizeAxis("batch size (images)", "batch {}")

    def preload(self, backend: Backend, case: Case) -> None:
        if case.param("framework") == "keras":
            keras_on_torch()  # Keras's import: 4.3 s in a fresh worker on the H100 host

    def has_parts(self, case: Case) -> bool:
        return case.variant != "as_written"  # the batch's copy to the device, alone

    def prepare(self, backend: Backend, case: Case) -> Prepared:
        if backend.name != "torch":
            raise BackendUnavailable(f"cnn runs on torch (Keras on its torch backend), "
                                     f"not {backend.name}")
        framework = case.param("framework", "torch")
        if framework not in ("keras", "torch"):
            raise UsageError(f"framework={framework!r}; known: keras, torch")
        if case.variant == "as_written" and framework != "keras":
            raise UsageError("as_written replays the post's Keras fit: use framework=keras")
        trainer = keras_trainer(case) if framework == "keras" else torch_trainer(case)
        recorded = _conv_tf32(case)
        epochs = _int_param(case.params, "epochs", 1) if "epochs" in dict(case.params) else 0
        steps = _int_param(case.params, "steps", DEFAULT_STEPS[case.device.partition(":")[0]])
        n = TRAIN_IMAGES if epochs else images_for_steps(steps, case.size)
        images = dataset(case, n if case.variant == "as_written" else DEVICE_BATCHES * case.size)
        first = images.take(DEVICE_BATCHES * case.size)
        b = case.size
        host_np = [(first.x[i * b:(i + 1) * b], first.y[i * b:(i + 1) * b])
                   for i in range(DEVICE_BATCHES)]
        precision = "bfloat16" if case.variant == "tuned" else case.dtype
        check = checker(trainer, trainer.state(), host_np[0], precision)
        host = [trainer.host_form(*b) for b in host_np]
        on_device = itertools.cycle([trainer.to_device(*b) for b in host])
        loads = itertools.cycle(host)
        prepared = Prepared(call=lambda: trainer.step(*next(on_device)), check=check,
                            single_call=True, counters=recorded,
                            parts=(("load", lambda: trainer.to_device(*next(loads))),))
        if case.variant != "as_written":
            return prepared
        return replace(prepared, parts=(), self_timed=fit_replay(
            trainer, case, images, max(epochs, 1), recorded))


def _conv_tf32(case: Case) -> dict[str, float]:
    """Whether float32 convolutions ran on TF32 (PyTorch's cuDNN default), for fairness."""
    if not on_gpu(case.device) or case.variant == "tuned":
        return {}
    import torch

    return {"conv_tf32": float(torch.backends.cudnn.allow_tf32)}
