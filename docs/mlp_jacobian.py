"""Seed 004's network and its Jacobian three ways, for `docs/your-code.md`.

    gpuvs run-file docs/mlp_jacobian.py::naive --sizes 10,100
    gpuvs run-file docs/mlp_jacobian.py::vmapped --sizes 1e2:1e4
"""

import torch
from torch.autograd.functional import jacobian

torch.manual_seed(0)
# The post's MLP: Linear(1,20) → tanh → Linear(20,20) → tanh → Linear(20,400).
net = torch.nn.Sequential(torch.nn.Linear(1, 20), torch.nn.Tanh(), torch.nn.Linear(20, 20),
                          torch.nn.Tanh(), torch.nn.Linear(20, 400))


def inputs(size):
    """The network and a batch t of `size` points (the post's val = 100: shape (100, 1))."""
    return net, torch.rand(size, 1)


def naive(model, t):
    """As the post wrote it: one backward pass per output element (size × 400 of them),
    and the full cross-batch Jacobian, almost all zeros."""
    return jacobian(lambda t_: model(t_), t)


def vectorised(model, t):
    """The same Jacobian, its backward passes batched by vmap inside `jacobian`."""
    return jacobian(lambda t_: model(t_), t, vectorize=True)


def vmapped(model, t):
    """Only the per-sample Jacobian d out_i / d t_i, shape (size, 400, 1): what is wanted."""
    return torch.func.vmap(torch.func.jacrev(model))(t)
