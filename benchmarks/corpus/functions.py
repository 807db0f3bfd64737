"""Ordinary PyTorch functions `gpuvs predict` was not shaped on: its validation corpus.

Each is a piece people run — attention and its variants, normalisations, MLP and conv
blocks (an `nn.Module`'s forward), embeddings and losses, sorting, top-k and unique,
scans, FFTs, indexing, gathers, scatters, masked and sparse ops — at a small size (a
call the host's launches decide) and a large one (one the device's work decides). Each
`build(size)` gives the function and its CPU arguments, seeded: every run the same.

The split is fixed, by function: `fit` functions calibrate the model for the user's
code (their measured ÷ modelled times: `benchmarks/corpus.py tables`), `held_out` ones
are judged with that calibration and never shaped it. Only held-out figures are
published against the bar. The model's classes were written before any of these were
measured on a GPU, and none of them is one of the suite's workloads (matrix products,
`x *= 5`, the GRU, the CNN, the Jacobians).

Outputs are compared across devices by `gpuvs.compare`, so what a function returns is
the same on any device: values with ties (a sort's, a top-k's) are drawn distinct, and
indices are returned only where no tie can reorder them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Built = tuple[Callable[..., Any], tuple[Any, ...]]


@dataclass(frozen=True)
class Function:
    name: str
    split: str                      # "fit" or "held_out"
    sizes: tuple[int, int]          # small (launch-bound), large (device-bound)
    build: Callable[[int], Built]   # size → (the function, its CPU arguments)
    what: str


def _g() -> Any:
    import torch
    return torch.Generator().manual_seed(0)


def _rand(*shape: int) -> Any:
    import torch
    return torch.rand(*shape, generator=_g())


def _distinct(*shape: int) -> Any:
    """Distinct values (a permutation, as float32 exactly): no tie for a sort to order."""
    import torch
    n = 1
    for s in shape:
        n *= s
    return torch.randperm(n, generator=_g()).float().reshape(shape) / n


def _module(make: Callable[[], Any]) -> Any:
    import torch
    torch.manual_seed(0)
    return make().eval()


# --- attention ---------------------------------------------------------------------

def sdpa(n: int) -> Built:
    import torch.nn.functional as F
    q, k, v = (_rand(8, 8, n, 64) for _ in range(3))
    return F.scaled_dot_product_attention, (q, k, v)


def sdpa_causal(n: int) -> Built:
    import torch.nn.functional as F

    def causal(q: Any, k: Any, v: Any) -> Any:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return causal, tuple(_rand(4, 8, n, 64) for _ in range(3))


def sdpa_masked(n: int) -> Built:
    import torch
    import torch.nn.functional as F

    def masked(q: Any, k: Any, v: Any, keep: Any) -> Any:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    keep = torch.rand(n, n, generator=_g()) > 0.2
    return masked, (*(_rand(4, 8, n, 64) for _ in range(3)), keep)


def manual_attention(n: int) -> Built:
    import torch

    def attention(q: Any, k: Any, v: Any) -> Any:
        scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        return torch.softmax(scores, dim=-1) @ v
    return attention, tuple(_rand(4, 8, n, 64) for _ in range(3))


def mha(n: int) -> Built:
    import torch

    class SelfAttention(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = torch.nn.MultiheadAttention(256, 8, batch_first=True)

        def forward(self, x: Any) -> Any:
            return self.attn(x, x, x, need_weights=False)[0]
    return _module(SelfAttention), (_rand(n, 64, 256),)


# --- normalisations ----------------------------------------------------------------

def layer_norm(n: int) -> Built:
    import torch
    return _module(lambda: torch.nn.LayerNorm(1024)), (_rand(n, 1024),)


def rms_norm(n: int) -> Built:
    import torch.nn.functional as F

    def rms(x: Any, w: Any) -> Any:
        return F.rms_norm(x, (1024,), w)
    return rms, (_rand(n, 1024), _rand(1024))


def batch_norm(n: int) -> Built:
    import torch
    return _module(lambda: torch.nn.BatchNorm1d(512)), (_rand(n, 512),)


def group_norm(n: int) -> Built:
    import torch.nn.functional as F

    def groups(x: Any) -> Any:
        return F.group_norm(x, 8)
    return groups, (_rand(n, 64, 32, 32),)


def softmax_layer_norm(n: int) -> Built:
    import torch
    import torch.nn.functional as F

    def both(x: Any) -> Any:
        return F.layer_norm(torch.softmax(x, dim=-1), (x.shape[-1],))
    return both, (_rand(n, 2048),)


# --- MLP and conv blocks -----------------------------------------------------------

def mlp_block(n: int) -> Built:
    import torch
    return _module(lambda: torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024))), (
        _rand(n, 1024),)


def mlp_small(n: int) -> Built:
    import torch
    return _module(lambda: torch.nn.Sequential(*(
        m for _ in range(3) for m in (torch.nn.Linear(256, 256), torch.nn.ReLU())))), (
        _rand(n, 256),)


def transformer_ffn(n: int) -> Built:
    import torch

    class PreNormFFN(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm = torch.nn.LayerNorm(512)
            self.up, self.down = torch.nn.Linear(512, 2048), torch.nn.Linear(2048, 512)

        def forward(self, x: Any) -> Any:
            return x + self.down(torch.nn.functional.silu(self.up(self.norm(x))))
    return _module(PreNormFFN), (_rand(n, 128, 512),)


def conv_block(n: int) -> Built:
    import torch
    return _module(lambda: torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2))), (_rand(n, 3, 64, 64),)


def conv_stack(n: int) -> Built:
    import torch
    return _module(lambda: torch.nn.Sequential(
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10))), (
        _rand(n, 32, 32, 32),)


def depthwise_conv(n: int) -> Built:
    import torch
    return _module(lambda: torch.nn.Sequential(
        torch.nn.Conv2d(64, 64, 3, padding=1, groups=64), torch.nn.Conv2d(64, 128, 1),
        torch.nn.ReLU6())), (_rand(n, 64, 56, 56),)


def resnet_block(n: int) -> Built:
    import torch

    class Basic(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c1 = torch.nn.Conv2d(64, 64, 3, padding=1, bias=False)
            self.b1 = torch.nn.BatchNorm2d(64)
            self.c2 = torch.nn.Conv2d(64, 64, 3, padding=1, bias=False)
            self.b2 = torch.nn.BatchNorm2d(64)

        def forward(self, x: Any) -> Any:
            y = torch.relu(self.b1(self.c1(x)))
            return torch.relu(x + self.b2(self.c2(y)))
    return _module(Basic), (_rand(n, 64, 32, 32),)


# --- embeddings and losses ---------------------------------------------------------

def embedding(n: int) -> Built:
    import torch
    ids = torch.randint(0, 50_000, (n, 128), generator=_g())
    return _module(lambda: torch.nn.Embedding(50_000, 256)), (ids,)


def embedding_mean(n: int) -> Built:
    import torch

    def mean_of(table: Any, ids: Any) -> Any:
        return torch.nn.functional.embedding(ids, table).mean(dim=1)
    return mean_of, (_rand(20_000, 128), torch.randint(0, 20_000, (n, 64), generator=_g()))


def cross_entropy(n: int) -> Built:
    import torch
    import torch.nn.functional as F

    def loss(logits: Any, target: Any) -> Any:
        return F.cross_entropy(logits, target)
    return loss, (_rand(n, 32_000), torch.randint(0, 32_000, (n,), generator=_g()))


def smoothed_cross_entropy(n: int) -> Built:
    import torch
    import torch.nn.functional as F

    def loss(logits: Any, target: Any) -> Any:
        return F.cross_entropy(logits, target, label_smoothing=0.1)
    return loss, (_rand(n, 1000), torch.randint(0, 1000, (n,), generator=_g()))


def regression_losses(n: int) -> Built:
    import torch.nn.functional as F

    def losses(a: Any, b: Any) -> Any:
        return F.mse_loss(a, b) + 0.5 * F.l1_loss(a, b)
    return losses, (_rand(n, 256), _rand(n, 256) * 2)


# --- sorting, top-k, unique --------------------------------------------------------

def sort(n: int) -> Built:
    import torch

    def values(x: Any) -> Any:
        return torch.sort(x).values
    return values, (_distinct(n),)


def argsort_rows(n: int) -> Built:
    import torch

    def order(x: Any) -> Any:
        return torch.argsort(x, dim=1)
    return order, (_distinct(n, 1024),)


def topk(n: int) -> Built:
    import torch

    def best(logits: Any) -> Any:
        return torch.topk(logits, 50, dim=-1).values
    return best, (_distinct(n, 32_000),)


def unique(n: int) -> Built:
    import torch
    return torch.unique, (torch.randint(0, max(n // 10, 2), (n,), generator=_g()),)


def unique_counts(n: int) -> Built:
    import torch

    def counted(x: Any) -> Any:
        return torch.unique(x, return_counts=True)
    return counted, (torch.randint(0, 1000, (n,), generator=_g()),)


# --- scans and FFTs ----------------------------------------------------------------

def cumsum_rows(n: int) -> Built:
    import torch

    def running(x: Any) -> Any:
        return torch.cumsum(x, dim=1)
    return running, (_rand(n, 1024),)


def logcumsumexp(n: int) -> Built:
    import torch

    def running(x: Any) -> Any:
        return torch.logcumsumexp(x, dim=-1)
    return running, (_rand(n, 512),)


def rfft2(n: int) -> Built:
    import torch

    def spectrum(x: Any) -> Any:
        return torch.fft.rfft2(x).abs()
    return spectrum, (_rand(n, 128, 128),)


def fft_convolve(n: int) -> Built:
    import torch

    def convolve(a: Any, b: Any) -> Any:
        size = a.shape[-1] + b.shape[-1]
        return torch.fft.irfft(torch.fft.rfft(a, size) * torch.fft.rfft(b, size), size)
    return convolve, (_rand(n, 2048), _rand(n, 2048))


# --- indexing, gathers, scatters, masked and sparse ops ----------------------------

def gather_rows(n: int) -> Built:
    import torch

    def rows(x: Any, idx: Any) -> Any:
        return x[idx]
    return rows, (_rand(100_000, 256), torch.randint(0, 100_000, (n,), generator=_g()))


def take_along(n: int) -> Built:
    import torch

    def picked(x: Any, idx: Any) -> Any:
        return torch.gather(x, 1, idx)
    return picked, (_rand(n, 1024), torch.randint(0, 1024, (n, 64), generator=_g()))


def index_add(n: int) -> Built:
    import torch

    def summed(src: Any, idx: Any) -> Any:
        return torch.zeros(1000, src.shape[1], device=src.device).index_add_(0, idx, src)
    return summed, (_rand(n, 128), torch.randint(0, 1000, (n,), generator=_g()))


def segment_sum(n: int) -> Built:
    import torch

    def by_segment(values: Any, segment: Any) -> Any:
        return torch.zeros(256, device=values.device).scatter_reduce(0, segment, values, "sum")
    return by_segment, (_rand(n), torch.randint(0, 256, (n,), generator=_g()))


def masked_fill(n: int) -> Built:
    import torch

    def masked(x: Any) -> Any:
        return torch.where(x > 0.9, x, 0.0).masked_fill(x < 0.1, -1.0).sum(dim=-1)
    return masked, (_rand(n, 1024),)


def boolean_select(n: int) -> Built:
    def above(x: Any) -> Any:
        return x[x > 0.5]
    return above, (_rand(n),)


def bincount(n: int) -> Built:
    import torch
    return torch.bincount, (torch.randint(0, 4096, (n,), generator=_g()),)


def sparse_mm(n: int) -> Built:
    import torch

    def product(a: Any, b: Any) -> Any:
        return torch.sparse.mm(a, b)
    dense = torch.rand(n, n, generator=_g())
    return product, ((dense * (dense > 0.99)).to_sparse(), _rand(n, 64))


FUNCTIONS = (
    Function("sdpa", "held_out", (64, 1024), sdpa, "scaled-dot-product attention"),
    Function("sdpa_causal", "fit", (64, 1024), sdpa_causal, "causal SDPA"),
    Function("sdpa_masked", "held_out", (64, 1024), sdpa_masked, "SDPA with a boolean mask"),
    Function("manual_attention", "held_out", (64, 1024), manual_attention,
             "softmax(QKᵀ/√d)V written out"),
    Function("mha", "fit", (2, 64), mha, "nn.MultiheadAttention self-attention"),
    Function("layer_norm", "held_out", (16, 16_384), layer_norm, "nn.LayerNorm(1024)"),
    Function("rms_norm", "fit", (16, 16_384), rms_norm, "F.rms_norm"),
    Function("batch_norm", "held_out", (16, 65_536), batch_norm, "nn.BatchNorm1d, eval"),
    Function("group_norm", "fit", (2, 64), group_norm, "F.group_norm, 8 groups"),
    Function("softmax_layer_norm", "held_out", (8, 8192), softmax_layer_norm,
             "layer norm after softmax"),
    Function("mlp_block", "held_out", (8, 2048), mlp_block,
             "Linear(1024, 4096), GELU, Linear(4096, 1024)"),
    Function("mlp_small", "fit", (4, 8192), mlp_small, "three Linear(256, 256) + ReLU"),
    Function("transformer_ffn", "held_out", (1, 32), transformer_ffn,
             "pre-norm feed-forward with a residual"),
    Function("conv_block", "held_out", (2, 64), conv_block, "conv, batch norm, ReLU, pool"),
    Function("conv_stack", "fit", (2, 64), conv_stack, "two convs, pool, a linear head"),
    Function("depthwise_conv", "held_out", (1, 32), depthwise_conv,
             "depthwise 3×3 then pointwise conv"),
    Function("resnet_block", "fit", (2, 64), resnet_block, "a ResNet basic block"),
    Function("embedding", "held_out", (4, 512), embedding, "nn.Embedding lookup"),
    Function("embedding_mean", "fit", (4, 512), embedding_mean, "embedding bag by mean"),
    Function("cross_entropy", "held_out", (8, 512), cross_entropy,
             "cross-entropy over 32k classes"),
    Function("smoothed_cross_entropy", "fit", (8, 8192), smoothed_cross_entropy,
             "label-smoothed cross-entropy"),
    Function("regression_losses", "held_out", (8, 65_536), regression_losses, "MSE + L1"),
    Function("sort", "held_out", (10_000, 2_000_000), sort, "sort of a vector"),
    Function("argsort_rows", "fit", (8, 8192), argsort_rows, "argsort of each row"),
    Function("topk", "held_out", (4, 256), topk, "top-50 of 32k logits"),
    Function("unique", "fit", (10_000, 2_000_000), unique, "unique of integers"),
    Function("unique_counts", "held_out", (10_000, 2_000_000), unique_counts,
             "unique with counts"),
    Function("cumsum_rows", "held_out", (8, 16_384), cumsum_rows, "cumulative sum of rows"),
    Function("logcumsumexp", "fit", (8, 16_384), logcumsumexp, "log-cumulative-sum-exp"),
    Function("rfft2", "held_out", (2, 256), rfft2, "2-D real FFT magnitude"),
    Function("fft_convolve", "fit", (2, 1024), fft_convolve, "convolution through FFTs"),
    Function("gather_rows", "held_out", (64, 200_000), gather_rows, "x[idx] of rows"),
    Function("take_along", "fit", (8, 16_384), take_along, "torch.gather along rows"),
    Function("index_add", "held_out", (64, 200_000), index_add, "index_add_ of rows"),
    Function("segment_sum", "held_out", (10_000, 2_000_000), segment_sum,
             "scatter_reduce sum by segment"),
    Function("masked_fill", "held_out", (8, 16_384), masked_fill, "where, masked_fill, sum"),
    Function("boolean_select", "fit", (10_000, 2_000_000), boolean_select,
             "x[x > 0.5]"),
    Function("bincount", "held_out", (10_000, 2_000_000), bincount, "bincount"),
    Function("sparse_mm", "held_out", (512, 4096), sparse_mm, "sparse (1 %) × dense"),
)
