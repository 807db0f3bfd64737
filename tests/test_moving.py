"""What `gpuvs.compare` moves and brings back: the tensors and arrays inside any nesting of
lists, tuples, mappings and dataclasses, with every container keeping its type.

`Output` is built the way Hugging Face builds `transformers.utils.ModelOutput` (which is
not installed here): a dataclass that is also an OrderedDict, whose keys are its fields
that are not None and whose `__setitem__` sets the attribute too.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict, namedtuple
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pytest

from gpuvs.errors import UsageError
from gpuvs.yours import moving
from gpuvs.yours.agreement import agreement

torch = pytest.importorskip("torch")


@dataclass
class Output(OrderedDict):  # type: ignore[type-arg]
    logits: Any = None
    hidden: Any = None
    loss: Any = None

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) is not None:
                self[f.name] = getattr(self, f.name)

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        super().__setattr__(key, value)


@dataclass(frozen=True)
class Batch:
    images: Any
    labels: Any
    name: str = "train"
    extras: dict[str, Any] = field(default_factory=dict)


Pair = namedtuple("Pair", "a b")


def test_a_model_output_keeps_its_type_keys_and_attributes_on_the_way_back() -> None:
    out = Output(logits=torch.ones(2, 3), hidden=(torch.zeros(2), torch.zeros(2)))
    back = moving.to_host(out)
    assert type(back) is Output and list(back) == ["logits", "hidden"]
    assert back.loss is None and back["logits"] is back.logits
    assert back.logits is not out.logits and torch.equal(back.logits, out.logits)
    assert type(back.hidden) is tuple and len(back.hidden) == 2


def test_a_frozen_dataclass_is_copied_field_by_field_without_its_init() -> None:
    batch = Batch(torch.rand(4, 3), np.arange(4), extras={"w": np.ones(4)})
    moved = moving.to_device(batch, "cpu")
    assert type(moved) is Batch and moved.name == "train"
    assert moved.images is not batch.images and torch.equal(moved.images, batch.images)
    assert moved.labels is not batch.labels and moved.extras["w"] is not batch.extras["w"]
    assert moving.leaves(batch) == [batch.images, batch.labels, batch.extras["w"]]


def test_every_walk_sees_inside_dataclasses_and_dict_subclasses() -> None:
    counts: defaultdict[str, int] = defaultdict(int, {"n": 1})
    args = (Batch(torch.rand(4, 3, dtype=torch.float64), np.arange(4)),
            Output(logits=np.ones((4, 2))), Pair(np.ones(4), counts))
    assert moving.batch_size(args) == 4 and moving.floating_dtype(args) == "float64"
    assert moving.backend_for(args, "cpu") == "torch"
    assert moving.data_devices(args) == ["cpu"]
    bigger = moving.resized(args, 6)
    assert bigger[0].images.shape == (6, 3) and bigger[1].logits.shape == (6, 2)
    assert type(bigger[2]) is Pair and bigger[2].b.default_factory is int


def test_a_snapshot_is_not_changed_by_later_writes_into_the_output() -> None:
    buffer = torch.zeros(3)
    snap = moving.snapshot(Output(logits=buffer))
    buffer += 1
    assert torch.equal(snap.logits, torch.zeros(3)) and snap["logits"] is snap.logits


def test_an_array_of_another_library_inside_a_dataclass_is_named_by_its_path() -> None:
    class Foreign:
        def __array__(self) -> np.ndarray:
            return np.ones(2)

    with pytest.raises(UsageError, match=r"args\.labels \(.*Foreign\)"):
        moving.to_device(Batch(np.ones(2), Foreign()), "cpu")


def test_dataclass_outputs_are_compared_field_by_field() -> None:
    ref = Batch(np.ones(3), np.arange(3))
    assert agreement(Batch(np.ones(3), np.arange(3)), ref, "cuda", "cpu").agrees
    wrong = agreement(Batch(np.ones(3), np.array([0, 1, 5])), ref, "cuda", "cpu")
    assert wrong.reason is not None and wrong.reason.startswith("output.labels on cuda")
    other = agreement(Pair(np.ones(3), 1), ref, "cuda", "cpu")
    assert other.reason == "output on cuda is a Pair, not a Batch as on cpu"


@pytest.mark.gpu
def test_on_cuda_a_dataclass_and_a_model_output_move_there_and_come_back() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    batch = Batch(torch.rand(4, 3), np.arange(4), extras={"out": Output(logits=torch.ones(2))})
    moved = moving.to_device(batch, "cuda:0", numpy_to_cupy=False)
    assert moved.images.is_cuda and isinstance(moved.labels, np.ndarray)
    out = moved.extras["out"]
    assert type(out) is Output and out.logits.is_cuda and out["logits"] is out.logits
    back = moving.to_host(moved)
    assert not back.images.is_cuda and torch.equal(back.images, batch.images)
    assert not back.extras["out"].logits.is_cuda


@pytest.mark.gpu
def test_on_cuda_numpy_arrays_in_a_dataclass_become_cupy_arrays_and_come_back() -> None:
    cupy = pytest.importorskip("cupy")
    batch = Batch(np.ones((4, 3)), np.arange(4))
    moved = moving.to_device(batch, "cuda:0")
    assert isinstance(moved.images, cupy.ndarray) and moved.images.device.id == 0
    back = moving.to_host(moved)
    assert isinstance(back.images, np.ndarray) and np.array_equal(back.images, batch.images)


def test_the_bytes_an_end_to_end_call_copies_count_arrays_and_tensors_not_modules() -> None:
    args = (torch.ones(10), {"w": np.ones(3)}, Batch(np.ones((2, 2)), np.arange(2)),
            torch.nn.Linear(100, 100), 7)
    assert moving.copied_bytes(args) == 10 * 4 + 3 * 8 + 4 * 8 + 2 * 8
