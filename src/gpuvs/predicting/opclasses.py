"""Which class each aten op is (`model.OP_CLASSES`): what it costs on a GPU by what it does.

The user's code is counted on the CPU one aten op at a time (`counting`); each op is
priced by its class's measured cost on the target (`pricing`): a sort as many passes over
its memory, a matrix product by its FLOPs, a view as no kernel at all. The table here is
the one owner of that sorting. An op it does not list is sorted by torch's own tags
(`pointwise` is elementwise, `reduction` a reduction, a `dynamic_output_shape` op waits
for the GPU to learn its size); an op neither knows is given the nearest class by its
shapes, and the answer names it ("aten.foo priced as a reduction: not in gpuvs's op
table"). An op with no class of its own (a sparse product) is priced by the class
nearest it, named too.

Some ops wait for the GPU (`syncs`): a unique, a boolean mask's selection, `.item()` —
their output's size or value must reach the host before the call goes on, so what the
host and the device do around them does not overlap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuvs.model import OP_CLASSES

VIEW = "view"   # no kernel: a view, an alias, an allocation, a CPU scalar
_CLASSES: dict[str, tuple[str, ...]] = {
    "matmul": ("mm", "addmm", "bmm", "baddbmm", "addbmm", "addmv", "mv", "dot", "vdot",
               "addr", "_scaled_mm", "linear", "matmul", "_int_mm"),
    "conv": ("convolution", "_convolution", "cudnn_convolution", "convolution_overrideable",
             "_slow_conv2d_forward", "mkldnn_convolution", "_conv_depthwise2d",
             "conv_depthwise3d", "slow_conv3d_forward", "cudnn_convolution_transpose",
             "slow_conv_transpose2d", "slow_conv_dilated2d", "_nnpack_spatial_convolution"),
    "attention": ("_scaled_dot_product_flash_attention_for_cpu",
                  "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                  "_scaled_dot_product_cudnn_attention", "_flash_attention_forward",
                  "_efficient_attention_forward",
                  "_scaled_dot_product_fused_attention_overrideable"),
    "reduction": ("nll_loss_forward", "nll_loss2d_forward", "mse_loss", "l1_loss",
                  "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "soft_margin_loss",
                  "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool2d",
                  "avg_pool3d", "_adaptive_avg_pool2d", "_adaptive_avg_pool3d",
                  "adaptive_max_pool2d", "max_pool2d", "avg_pool1d", "histc", "cdist",
                  "_cdist_forward", "_pdist_forward", "cosine_similarity", "dist",
                  "_weight_norm_interface", "kl_div", "trace", "_embedding_bag"),
    "scan": ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "_cummax_helper",
             "_cummin_helper"),
    "sort": ("sort", "argsort", "msort", "median", "nanmedian", "kthvalue", "mode",
             "randperm", "quantile", "nanquantile"),
    "topk": ("topk",),
    "unique": ("_unique", "_unique2", "unique_dim", "unique_consecutive",
               "unique_dim_consecutive"),
    "select": ("nonzero", "masked_select", "_local_scalar_dense", "item", "repeat_interleave",
               "argwhere", "nonzero_static", "is_nonzero", "equal", "one_hot"),
    "gather": ("index", "index_select", "gather", "embedding", "take", "take_along_dim",
               "searchsorted", "bucketize", "grid_sampler_2d", "grid_sampler_3d",
               "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
               "upsample_bilinear2d", "upsample_bicubic2d", "upsample_linear1d",
               "_upsample_nearest_exact2d", "_upsample_bilinear2d_aa", "embedding_bag"),
    "scatter": ("scatter", "scatter_add", "scatter_reduce", "index_add", "index_put",
                "_index_put_impl", "index_copy", "index_fill", "index_reduce", "masked_scatter",
                "put", "bincount", "embedding_dense_backward"),
    "norm": ("_softmax", "_log_softmax", "softmax", "log_softmax", "native_layer_norm",
             "native_batch_norm", "_native_batch_norm_legit",
             "_native_batch_norm_legit_no_training", "_native_batch_norm_legit_functional",
             "native_group_norm", "_fused_rms_norm", "rms_norm", "_batch_norm_with_update",
             "_batch_norm_no_update", "cudnn_batch_norm", "miopen_batch_norm",
             "batch_norm_stats", "batch_norm_elemt", "_masked_softmax", "local_response_norm",
             "renorm"),
    "fft": ("_fft_r2c", "_fft_c2r", "_fft_c2c"),
    # elementwise ops torch does not tag `pointwise` (the tagged ones need no entry)
    "elementwise": ("masked_fill", "rsub", "glu", "hardswish", "log_sigmoid_forward",
                    "prelu", "_prelu_kernel", "rrelu_with_noise", "polar", "complex",
                    "native_dropout_backward", "threshold_backward"),
    "create": ("zeros", "ones", "full", "fill", "zero", "arange", "linspace", "logspace",
               "eye", "rand", "randn", "randint", "rand_like", "randn_like", "randint_like",
               "normal", "uniform", "random", "bernoulli", "exponential", "geometric",
               "cauchy", "log_normal", "zeros_like", "ones_like", "full_like", "new_zeros",
               "new_ones", "new_full", "tril_indices", "triu_indices", "multinomial",
               "native_dropout", "poisson"),
    "copy": ("clone", "copy", "_to_copy", "_copy_from", "_copy_from_and_resize", "cat",
             "stack", "hstack", "vstack", "repeat", "flip", "roll", "rot90",
             "constant_pad_nd", "reflection_pad1d", "reflection_pad2d", "reflection_pad3d",
             "replication_pad1d", "replication_pad2d", "replication_pad3d", "narrow_copy",
             "slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter",
             "lift_fresh_copy", "lift", "pixel_shuffle", "pixel_unshuffle", "im2col", "col2im",
             "channel_shuffle", "tril", "triu", "diag_embed", "diag", "_reshape_copy",
             "contiguous", "block_diag", "tile"),
    VIEW: ("_unsafe_view", "lift_fresh", "detach", "alias", "_reshape_alias", "resolve_conj",
           "resolve_neg", "_neg_view", "_conj", "empty", "empty_like", "empty_strided",
           "new_empty", "new_empty_strided", "empty_permuted", "resize", "scalar_tensor",
           "set", "_has_compatible_shallow_copy_type", "sym_size", "sym_stride",
           "sym_numel", "sym_storage_offset"),
}
TABLE: dict[str, str] = {op: c for c, ops in _CLASSES.items() for op in ops}
# Ops of no class of their own, priced as the nearest class, with what they are.
NO_CLASS: dict[str, tuple[str, str]] = {
    **{op: ("gather", "a sparse product") for op in (
        "_sparse_addmm", "_sparse_mm", "sparse_mm", "_sparse_sparse_matmul", "hspmm",
        "_sparse_mm_reduce_impl", "_sparse_csr_mm", "_spdiags", "_to_sparse", "to_sparse",
        "_to_dense", "to_dense", "coalesce", "_coalesce", "_sparse_sum", "_to_sparse_csr",
        "_to_sparse_csc", "_to_sparse_bsr", "_to_sparse_bsc",
        "_sparse_coo_tensor_with_dims_and_tensors")},
    **{op: ("matmul", "a linear-algebra solver") for op in (
        "linalg_solve_ex", "linalg_lu_factor_ex", "linalg_cholesky_ex", "linalg_inv_ex",
        "linalg_eigh", "linalg_eig", "_linalg_svd", "linalg_qr", "_linalg_det",
        "_linalg_slogdet", "triangular_solve", "linalg_solve_triangular", "cholesky_solve",
        "linalg_lstsq")},
}
# Where a profile lacks a class's probe (an older profile, a class that failed there):
# the classes that cost most alike, nearest first; an elementwise op's cost last.
NEAREST: dict[str, tuple[str, ...]] = {
    "matmul": ("conv", "attention"), "conv": ("matmul",), "attention": ("matmul",),
    "reduction": ("norm",), "scan": ("reduction", "norm"), "sort": ("topk", "unique"),
    "topk": ("sort",), "unique": ("sort", "topk"), "select": ("scan", "unique"),
    "gather": ("copy",), "scatter": ("gather", "copy"), "norm": ("reduction",),
    "fft": ("norm", "reduction"), "create": ("copy",), "copy": ("elementwise",),
    "elementwise": ("copy",),
}
# Ops that wait for the device before the host goes on, beyond the classes that all do.
SYNCING_CLASSES = ("unique", "select")
SYNCS = ("bincount", "histc")


@dataclass(frozen=True)
class Sorted:
    """One op's class, and how it was found: `said` is "" where gpuvs's table or torch's
    tags gave it, else the words the answer names it with."""

    op_class: str       # a class of `model.OP_CLASSES`, or VIEW
    syncs: bool = False
    said: str = ""


def classify(func: Any, args: Any, out: Any) -> Sorted:
    """The class of the aten op `func` called on `args` giving `out`."""
    name = func._overloadpacket.__name__.removesuffix("_")
    if getattr(func, "is_view", False) or _tagged(func, "inplace_view"):
        return Sorted(VIEW)
    if name == "index" and _bool_index(args):  # a boolean mask: a selection, which syncs
        return Sorted("select", syncs=True)
    if (found := TABLE.get(name)) is not None:
        return Sorted(found, syncs=found in SYNCING_CLASSES or name in SYNCS)
    if name in NO_CLASS:
        nearest, what = NO_CLASS[name]
        return Sorted(nearest, said=f"{func} ({what}) priced as {OP_CLASSES[nearest]}: "
                                    "gpuvs has no class of its own for it")
    if name.startswith("_foreach_"):  # one kernel over a list of tensors
        return Sorted("elementwise")
    functional = _functional(func, name)  # an in-place op is tagged as its functional twin
    for tag, found in (("pointwise", "elementwise"), ("reduction", "reduction"),
                       ("view_copy", "copy"), ("dynamic_output_shape", "select"),
                       ("data_dependent_output", "select")):
        if _tagged(func, tag) or _tagged(functional, tag):
            return Sorted(found, syncs=found == "select")
    guess = _guess(func, args, out)
    return Sorted(guess, said=f"{func} priced as {OP_CLASSES[guess]}: not in gpuvs's op "
                              "table")


def flops(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any,
          op_class: str) -> float:
    """The op's FLOPs by torch's own formulas (`torch.utils.flop_counter`); an attention
    by its two products whatever kernel runs it — the CPU's, which torch's formulas do
    not know, included — and half of them where it is causal (the GPU's kernels skip the
    masked half)."""
    import torch
    from torch.utils.flop_counter import flop_registry

    packet = func._overloadpacket
    formula = flop_registry.get(packet)
    if op_class == "attention" and formula is None:  # the CPU's: laid out as flash's
        formula = flop_registry[torch.ops.aten._scaled_dot_product_flash_attention]
    if formula is None:
        return _vector_product_flops(packet, args)
    try:
        counted = float(formula(*args, **kwargs, out_val=out))
    except AssertionError:
        # torch's formula refuses shapes it predates: grouped-query attention, fewer key
        # and value heads than query heads (torch 2.11's asserted, and predict failed)
        if op_class != "attention":
            raise
        counted = _attention_flops(args)
    if op_class == "attention" and _argument(func, args, kwargs, "is_causal"):
        counted /= 2
    return counted


def _vector_product_flops(packet: Any, args: tuple[Any, ...]) -> float:
    """A matrix–vector or dot product's FLOPs, which torch's formulas leave out (0, and
    `gpuvs.predict` divided by the zero device time of a `torch.mv`): 2·m·n, 2·n."""
    name = getattr(packet, "__name__", "")
    if name in ("mv", "addmv"):
        matrix = args[0] if name == "mv" else args[1]
        return 2.0 * float(matrix.shape[0] * matrix.shape[1])
    if name in ("dot", "vdot"):
        return 2.0 * float(args[0].numel())
    return 0.0


def _attention_flops(args: tuple[Any, ...]) -> float:
    """An attention's two products, QKᵀ and PV, from its query (…, L, E) and value
    (…, S, Ev): 2·L·S·E + 2·L·S·Ev per query head, whatever the key and value heads."""
    query, value = args[0], args[2]
    heads = query.numel() // (query.shape[-2] * query.shape[-1])
    length, width = query.shape[-2], query.shape[-1]
    keys, value_width = value.shape[-2], value.shape[-1]
    return float(2 * heads * length * keys * (width + value_width))


def nearest(op_class: str, measured: set[str]) -> str | None:
    """The measured class nearest `op_class` (itself where measured), None if none is."""
    for candidate in (op_class, *NEAREST.get(op_class, ()), "elementwise"):
        if candidate in measured:
            return candidate
    return None


def _tagged(func: Any, tag: str) -> bool:
    import torch
    return getattr(torch.Tag, tag, None) in getattr(func, "tags", ())


def _functional(func: Any, name: str) -> Any:
    """The out-of-place overload of the same name as an in-place op (`abs_` → `abs`)."""
    import torch
    packet = getattr(torch.ops.aten, name, None)
    return getattr(packet, func._overloadname, None) if packet is not None else None


def _bool_index(args: Any) -> bool:
    import torch
    indices = args[1] if len(args) > 1 else ()
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in indices or ())


def _argument(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> Any:
    for i, a in enumerate(func._schema.arguments):
        if a.name == name:
            return kwargs.get(name, args[i] if i < len(args) else a.default_value)
    return None


def _guess(func: Any, args: Any, out: Any) -> str:
    """The nearest class of an op no table or tag sorts: a reduction where its output is
    far smaller than its largest input, else an elementwise op."""
    from torch.utils._pytree import tree_leaves

    def largest(tree: Any) -> int:
        return max((int(t.numel()) for t in tree_leaves(tree) if hasattr(t, "numel")),
                   default=0)

    return "reduction" if largest(out) * 2 < largest(args) else "elementwise"
