"""The CIFAR-100 loader on an archive built here in the distributed format, and the
synthetic images that stand in for it."""

from __future__ import annotations

import io
import pickle
import tarfile
from pathlib import Path

import numpy as np
import pytest

from gpuvs.errors import UsageError
from gpuvs.workloads.cifar import (
    CLASSES,
    MEMBERS,
    PIXELS,
    load_cifar100,
    one_hot,
    scaled,
    synthetic,
)


def _batch(n: int, seed: int) -> dict[bytes, object]:
    """One pickled part as the python version holds it: bytes keys, uint8 rows of 3072
    channel-major values, fine labels as a list of ints."""
    rng = np.random.default_rng(seed)
    return {b"filenames": [f"img_{i}.png".encode() for i in range(n)],
            b"batch_label": b"training batch 1 of 1",
            b"fine_labels": [int(v) for v in rng.integers(0, CLASSES, n)],
            b"coarse_labels": [int(v) for v in rng.integers(0, 20, n)],
            b"data": rng.integers(0, 256, (n, PIXELS), dtype=np.uint8)}


def _archive(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return path


def make_archive(tmp_path: Path, n_train: int = 40, n_test: int = 12,
                 protocol: int = pickle.DEFAULT_PROTOCOL) -> tuple[Path, dict, dict]:
    """A small cifar-100-python.tar.gz; returns its path and the two parts written."""
    train, test = _batch(n_train, 1), _batch(n_test, 2)
    meta = pickle.dumps({b"fine_label_names": [b"apple"] * CLASSES}, protocol=protocol)
    path = _archive(tmp_path / "cifar-100-python.tar.gz", {
        "cifar-100-python/meta": meta,
        MEMBERS["train"]: pickle.dumps(train, protocol=protocol),
        MEMBERS["test"]: pickle.dumps(test, protocol=protocol)})
    return path, train, test


@pytest.mark.parametrize("protocol", [2, pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL])
def test_the_loader_reads_both_parts_of_a_generated_archive(tmp_path: Path,
                                                            protocol: int) -> None:
    path, train, test = make_archive(tmp_path, protocol=protocol)
    got = load_cifar100(str(path))
    assert got.x.shape == (40, 32, 32, 3) and got.x.dtype == np.uint8
    assert got.y.tolist() == train[b"fine_labels"] and got.source == "CIFAR-100 train"
    assert len(load_cifar100(str(path), "test")) == 12


def test_rows_are_channel_major_planes_turned_into_nhwc(tmp_path: Path) -> None:
    path, train, _ = make_archive(tmp_path)
    x, data = load_cifar100(str(path)).x, train[b"data"]
    for i, r, c, ch in [(0, 0, 0, 0), (3, 5, 7, 1), (39, 31, 31, 2), (7, 0, 31, 2)]:
        assert x[i, r, c, ch] == data[i, ch * 1024 + r * 32 + c]


def test_scaled_batches_are_float32_in_0_1_in_either_layout(tmp_path: Path) -> None:
    x = load_cifar100(str(make_archive(tmp_path)[0])).x[:4]
    nhwc, nchw = scaled(x), scaled(x, "nchw")
    assert nhwc.dtype == nchw.dtype == np.float32 and nchw.shape == (4, 3, 32, 32)
    assert nhwc.min() >= 0.0 and nhwc.max() <= 1.0
    np.testing.assert_array_equal(nchw, nhwc.transpose(0, 3, 1, 2))
    np.testing.assert_allclose(nhwc, x / 255.0, rtol=1e-6)
    assert one_hot(np.array([2, 0])).tolist()[0][2] == 1.0


def test_take_cycles_when_asked_for_more_than_there_are(tmp_path: Path) -> None:
    images = load_cifar100(str(make_archive(tmp_path)[0]))
    more = images.take(100)
    assert len(more) == 100 and np.array_equal(more.x[40], images.x[0])


def test_a_missing_archive_says_where_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no CIFAR-100 archive at .*download "
                                         "cifar-100-python.tar.gz"):
        load_cifar100(str(tmp_path / "nowhere.tar.gz"))


def test_a_file_that_is_not_a_tar_archive_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "cifar-100-python.tar.gz"
    bad.write_bytes(b"\x1f\x8b not really gzip" * 10)
    with pytest.raises(UsageError, match="not a readable tar archive"):
        load_cifar100(str(bad))


def test_an_archive_without_the_members_is_a_usage_error(tmp_path: Path) -> None:
    path = _archive(tmp_path / "other.tar.gz", {"cifar-10-batches-py/data_batch_1": b"x"})
    with pytest.raises(UsageError, match="has no member 'cifar-100-python/train'"):
        load_cifar100(str(path))


def test_a_pickle_that_would_run_code_is_refused(tmp_path: Path) -> None:
    class Evil:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            import os

            return os.system, ("echo owned",)

    path = _archive(tmp_path / "evil.tar.gz", {MEMBERS["train"]: pickle.dumps(Evil())})
    with pytest.raises(UsageError, match="refusing posix.system|refusing os.system"):
        load_cifar100(str(path))


@pytest.mark.parametrize(("batch", "message"), [
    ({b"data": np.zeros((2, 100), np.uint8), b"fine_labels": [0, 1]}, "expected uint8 N × 3072"),
    ({b"data": np.zeros((2, PIXELS), np.uint8), b"fine_labels": [0, 100]}, "fine labels in 0..99"),
    ({b"data": np.zeros((2, PIXELS), np.uint8)}, "lacks 'data' or 'fine_labels'"),
    ([1, 2, 3], "holds a list, not a CIFAR batch dict"),
])
def test_a_batch_of_the_wrong_shape_is_a_usage_error(tmp_path: Path, batch: object,
                                                     message: str) -> None:
    path = _archive(tmp_path / "odd.tar.gz", {MEMBERS["train"]: pickle.dumps(batch)})
    with pytest.raises(UsageError, match=message):
        load_cifar100(str(path))


def test_synthetic_images_have_cifars_shape_and_learnable_classes() -> None:
    a, b = synthetic(500, seed=1), synthetic(500, seed=1)
    assert a.x.shape == (500, 32, 32, 3) and a.x.dtype == np.uint8 and a.source == "synthetic"
    assert np.array_equal(a.x, b.x) and a.y.min() >= 0 and a.y.max() < CLASSES
    # Same class, same pattern: two images of one class are closer than of two classes.
    x = a.x.reshape(500, -1).astype(np.float64)
    same = [np.abs(x[i] - x[j]).mean() for i in range(50) for j in range(i + 1, 500)
            if a.y[i] == a.y[j]]
    other = [np.abs(x[i] - x[j]).mean() for i in range(50) for j in range(i + 1, 60)
             if a.y[i] != a.y[j]]
    assert np.mean(same) < 0.8 * np.mean(other)
