"""The torch tensors a call holds, and their bytes: what the counting of the user's code
(`counting`) and the timing of its host's own cost (`hostcost`) both read."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def tensors(tree: Any, modules: bool = True) -> list[Any]:
    """The torch tensors in nested tuples, lists and dicts, each storage once (a sparse
    one as its indices and values, a compressed one — CSR, CSC, BSR, BSC — as its two
    index arrays and its values); a module's parameters and buffers too, unless not
    `modules`."""
    import torch

    _COMPRESSED = (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)
    from torch.utils._pytree import tree_leaves

    seen: set[int] = set()
    found = []
    for leaf in tree_leaves(tree):
        if isinstance(leaf, torch.nn.Module):
            leaves: Iterable[Any] = [*leaf.parameters(), *leaf.buffers()] if modules else []
        elif isinstance(leaf, torch.Tensor) and leaf.is_sparse:  # its indices and values
            leaves = [leaf._indices(), leaf._values()]
        elif isinstance(leaf, torch.Tensor) and leaf.layout in _COMPRESSED:
            # CSR and BSR by rows, CSC and BSC by columns: no storage of their own to read
            rows = leaf.layout in (torch.sparse_csr, torch.sparse_bsr)
            leaves = [leaf.crow_indices() if rows else leaf.ccol_indices(),
                      leaf.col_indices() if rows else leaf.row_indices(), leaf.values()]
        else:
            leaves = [leaf]
        for t in leaves:
            if isinstance(t, torch.Tensor) and id(t.untyped_storage()) not in seen:
                seen.add(id(t.untyped_storage()))
                found.append(t)
    return found


def nbytes(t: Any) -> int:
    return int(t.numel() * t.element_size())


def moved(args: Any, kwargs: Any, out: Any) -> int:
    """The bytes of one op's tensors, inputs and outputs, each storage once."""
    return sum(nbytes(t) for t in tensors((args, kwargs, out)))


def gathered(args: Any, kwargs: Any, out: Any) -> int:
    """The bytes a gather touches: the rows it picks (as many as it writes), its output
    and its indices — not the whole table it picks from. Counted as `moved`, 64 rows of
    a 100,000-row embedding table read as 102 MB, a 120 µs memory-bound call; the GPU took
    10 µs. Where every row is picked once (the op-class probe's gather) the two agree."""
    import torch

    indices = sum(nbytes(t) for t in tensors((args, kwargs))
                  if isinstance(t, torch.Tensor) and not t.is_floating_point()
                  and not t.is_complex())
    return min(moved(args, kwargs, out), 2 * sum(map(nbytes, tensors(out))) + indices)
