"""The images seed 003 trains on: real CIFAR-100 from its archive, or synthetic data of
the same shape.

`load_cifar100(path)` reads `cifar-100-python.tar.gz` as distributed
(https://www.cs.toronto.edu/~kriz/cifar.html): members `cifar-100-python/train` and
`cifar-100-python/test`, each a pickled dict whose `data` is uint8 N × 3072 — every row
one image, channel-major (1024 red, 1024 green, 1024 blue values, row by row) — and
whose `fine_labels` are the 100 classes the post trained on. The pickles are read by an
unpickler that admits NumPy arrays and nothing else: a crafted archive cannot run code.

`synthetic(n, seed)` makes images a network can learn (a fixed pattern per class under
noise), so a training run on them shows accuracy rising; they are not CIFAR and every
output that uses them says "synthetic".

Images stay uint8 NHWC (N × 32 × 32 × 3, the layout Keras reads) until `scaled` turns a
batch into float32 in [0, 1], NHWC or NCHW. `steps_per_epoch` counts what the post's
`fit(validation_split=0.15)` trains on, as Keras splits it.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import tarfile
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from gpuvs.errors import UsageError
from gpuvs.model import Case

CLASSES = 100
SIDE = 32
CHANNELS = 3
PIXELS = SIDE * SIDE * CHANNELS  # 3072 values per image
TRAIN_IMAGES = 50_000
TEST_IMAGES = 10_000
MEMBERS = {"train": "cifar-100-python/train", "test": "cifar-100-python/test"}
VALIDATION_SPLIT = 0.15  # the post's fit(validation_split=0.15): the last 15 % of images
ARCHIVE = "cifar-100-python.tar.gz"
SOURCE = "https://www.cs.toronto.edu/~kriz/cifar.html"

# The synthetic images: one 8 × 8 colour pattern per class, blown up to 32 × 32 and
# mixed half and half with uniform noise.
PATTERN_SIDE = 8
PATTERN_SHARE = 0.5
PATTERN_SEED = 100
SYNTHETIC_SEED = 3


@dataclass(frozen=True)
class Images:
    """uint8 images N × 32 × 32 × 3 (NHWC) and their int64 class labels; `source` says
    what they are ("CIFAR-100 train" or "synthetic") wherever they are reported."""

    x: np.ndarray
    y: np.ndarray
    source: str

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def take(self, n: int) -> Images:
        """The first `n` images, cycling when asked for more than there are."""
        idx = np.arange(n) % len(self)
        return Images(self.x[idx], self.y[idx], self.source)


def scaled(x: np.ndarray, layout: str = "nhwc") -> np.ndarray:
    """uint8 NHWC → float32 in [0, 1], in `layout` ("nhwc" for Keras, "nchw" for torch)."""
    out = x.astype(np.float32) / 255.0
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2)) if layout == "nchw" else out


def one_hot(y: np.ndarray, dtype: str = "float32") -> np.ndarray:
    out = np.zeros((y.shape[0], CLASSES), dtype=dtype)
    out[np.arange(y.shape[0]), y] = 1
    return out


def synthetic(n: int, seed: int = 0) -> Images:
    """`n` learnable images of CIFAR-100's shape, labels uniform over the 100 classes."""
    rng = np.random.default_rng(seed)
    # The patterns come from their own generator: every `n` and seed share the classes.
    patterns = np.random.default_rng(PATTERN_SEED).integers(
        0, 256, (CLASSES, PATTERN_SIDE, PATTERN_SIDE, CHANNELS), dtype=np.uint8)
    up = SIDE // PATTERN_SIDE
    patterns = patterns.repeat(up, axis=1).repeat(up, axis=2).astype(np.float32)
    y = rng.integers(0, CLASSES, n, dtype=np.int64)
    x = np.empty((n, SIDE, SIDE, CHANNELS), dtype=np.uint8)
    chunk = 4096  # bounded float32 temporaries however large n is
    for i in range(0, n, chunk):
        noise = rng.integers(0, 256, (min(chunk, n - i), SIDE, SIDE, CHANNELS))
        mixed = PATTERN_SHARE * patterns[y[i:i + chunk]] + (1 - PATTERN_SHARE) * noise
        x[i:i + chunk] = mixed.astype(np.uint8)
    return Images(x, y, "synthetic")


def dataset(case: Case, n: int) -> Images:
    """`n` images of the case's data: real CIFAR-100 (`dataset=cifar100`) or synthetic."""
    if case.param("dataset", "synthetic") == "synthetic":
        return synthetic(n, seed=SYNTHETIC_SEED)
    if not (path := case.param("cifar_path")):
        raise UsageError("dataset=cifar100 needs cifar_path=PATH to cifar-100-python.tar.gz")
    return load_cifar100(path).take(n)


def steps_per_epoch(batch: int, images: int = TRAIN_IMAGES) -> int:
    """Training steps of one `fit` epoch: Keras keeps floor(n × 0.85) images to train on
    (1329 for CIFAR-100's 50,000 at batch 32, as the post's log shows)."""
    return math.ceil(int(math.floor(images * (1.0 - VALIDATION_SPLIT))) / batch)


def images_for_steps(steps: int, batch: int) -> int:
    """Fewest images whose 85 % training split holds `steps` full batches."""
    n = math.ceil(steps * batch / (1.0 - VALIDATION_SPLIT))
    while int(math.floor(n * (1.0 - VALIDATION_SPLIT))) < steps * batch:
        n += 1
    return n


def load_cifar100(path: str, part: str = "train") -> Images:
    """One part ("train" or "test") of the CIFAR-100 archive at `path`; UsageError when it
    is missing or not that archive. Cached per file and modification time."""
    if part not in MEMBERS:
        raise UsageError(f"unknown CIFAR-100 part {part!r}; known: {', '.join(MEMBERS)}")
    if not os.path.isfile(path):
        raise UsageError(f"no CIFAR-100 archive at {path!r}: download {ARCHIVE} from "
                         f"{SOURCE} and pass its path")
    return _load(os.path.abspath(path), os.path.getmtime(path), part)


@lru_cache(maxsize=2)
def _load(path: str, mtime: float, part: str) -> Images:
    try:
        with tarfile.open(path, "r:*") as tar:
            member = tar.extractfile(MEMBERS[part])
            if member is None:
                raise KeyError(MEMBERS[part])
            batch = _ArraysOnly(io.BytesIO(member.read()), encoding="bytes").load()
    except KeyError:
        raise UsageError(f"{path!r} has no member {MEMBERS[part]!r}: not {ARCHIVE}") from None
    except (tarfile.TarError, OSError, EOFError) as e:
        raise UsageError(f"{path!r} is not a readable tar archive ({e}): not {ARCHIVE}"
                         ) from None
    except (pickle.UnpicklingError, ValueError, TypeError, AttributeError) as e:
        raise UsageError(f"{MEMBERS[part]} in {path!r} is not a CIFAR pickle ({e})") from None
    return _images(batch, f"{path}:{MEMBERS[part]}", part)


def _images(batch: object, where: str, part: str) -> Images:
    """Check a batch dict's shape and values, and turn its rows into NHWC images."""
    if not isinstance(batch, dict):
        raise UsageError(f"{where} holds a {type(batch).__name__}, not a CIFAR batch dict")
    got = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
    if "data" not in got or "fine_labels" not in got:
        raise UsageError(f"{where} lacks 'data' or 'fine_labels' (keys: "
                         f"{', '.join(sorted(map(str, got)))})")
    data, labels = np.asarray(got["data"]), np.asarray(got["fine_labels"], dtype=np.int64)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != PIXELS:
        raise UsageError(f"{where}: data is {data.dtype} {data.shape}, expected uint8 "
                         f"N × {PIXELS}")
    if labels.shape != (data.shape[0],) or labels.min(initial=0) < 0 \
            or labels.max(initial=0) >= CLASSES:
        raise UsageError(f"{where}: expected {data.shape[0]} fine labels in 0..{CLASSES - 1}")
    x = data.reshape(-1, CHANNELS, SIDE, SIDE).transpose(0, 2, 3, 1)  # → NHWC
    return Images(np.ascontiguousarray(x), labels, f"CIFAR-100 {part}")


class _ArraysOnly(pickle.Unpickler):
    """CIFAR's pickles hold dicts, lists, bytes and NumPy arrays; refuse anything else."""

    # NumPy 1 and 2 module names; `_frombuffer` is how pickle protocol 5 stores arrays,
    # `_codecs.encode` how protocol 2 stores bytes written by Python 3.
    ALLOWED = {
        *((f"numpy{core}.multiarray", name) for core in (".core", "._core")
          for name in ("_reconstruct", "scalar")),
        ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
        ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode"),
    }

    def find_class(self, module: str, name: str) -> type:
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)  # type: ignore[no-any-return]
        raise pickle.UnpicklingError(f"refusing {module}.{name}: not part of a CIFAR pickle")
