"""Three versions of one function, for `docs/your-code.md`: a softmax over each row of a
batch of scores, written as a Python loop over the rows, vectorised over the batch, and
that vectorised version compiled by `torch.compile`. Which one, on which device, from
what size on?

    gpuvs run-file docs/examples/versions.py::loop docs/examples/versions.py::vectorised \\
        docs/examples/versions.py::compiled --sizes 1e2:1e4

The first (`loop`) is the reference: the other two must give its output, within
float32's tolerance, on every device.
"""

import torch

WIDTH = 256  # scores per row


def inputs(size):
    """A batch of `size` rows of WIDTH scores, the same every time."""
    generator = torch.Generator().manual_seed(0)
    return torch.randn(size, WIDTH, generator=generator)


def loop(x):
    """A row at a time, as one writes it first: several small ops per row."""
    out = torch.empty_like(x)
    for i in range(x.shape[0]):
        e = torch.exp(x[i] - x[i].max())
        out[i] = e / e.sum()
    return out


def vectorised(x):
    """The whole batch at once: the same ops, each over every row."""
    e = torch.exp(x - x.max(dim=1, keepdim=True).values)
    return e / e.sum(dim=1, keepdim=True)


# The same function compiled (TorchInductor: one fused kernel on a GPU, vectorised C++
# on the CPU). Its first call at each new shape compiles: gpuvs keeps that call apart.
compiled = torch.compile(vectorised)
