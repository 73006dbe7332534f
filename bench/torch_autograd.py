"""Autograd cost of PyTorch eager for the side-by-side table of bench/run_bench.sh autograd.

Mirrors bench_autograd.cpp, one thread, float32:
  - chains of 64 ops y = op(y, w) on 64 x 64 tensors for add, relu (positive values) and matmul
    (by the identity): plain (w without requires_grad), recorded (w.requires_grad, graph built
    and dropped) and record_and_backward (plus torch.autograd.grad(sum(y), w)), in ns per op;
  - the MLP 4-64-64-2 (relu, relu, linear, MSE) on a batch of 64: forward alone, and forward +
    torch.autograd.grad over the six weight tensors, in ns per call.
Prints {name: nanoseconds} as JSON, names as the C++ benchmarks' without "BM_".
Exits quietly (status 0, empty output) when torch is not installed.
"""
import json
import sys
import timeit

try:
    import torch
except ImportError:
    sys.exit(0)

torch.set_num_threads(1)
CHAIN = 64  # as kChain in bench_autograd.cpp


def best_ns(fn, per_call=1):
    fn()  # warm up (allocator, autograd engine)
    number = max(1, int(0.05 / max(1e-9, timeit.timeit(fn, number=1))))
    return min(timeit.repeat(fn, number=number, repeat=5)) / number / per_call * 1e9


def chain(step, w):
    y = w
    for _ in range(CHAIN):
        y = step(y, w)
    return y


CONSTANT = torch.full((64, 64), 0.25)  # add_const's operand: never requires grad
CHAINS = {
    "add": (torch.full((64, 64), 0.5), lambda y, w: y + w),
    "add_const": (torch.full((64, 64), 0.5), lambda y, w: y + CONSTANT),
    "relu": (torch.linspace(0.1, 1.0, 64 * 64).reshape(64, 64), lambda y, w: torch.relu(y)),
    "matmul": (torch.eye(64), lambda y, w: y @ w),
}

results = {}
for op, (w0, step) in CHAINS.items():
    w_grad = w0.clone().requires_grad_(True)
    results[f"{op}_64x64_plain"] = best_ns(lambda: chain(step, w0), CHAIN)
    results[f"{op}_64x64_recorded"] = best_ns(lambda: chain(step, w_grad), CHAIN)
    results[f"{op}_64x64_record_and_backward"] = best_ns(
        lambda: torch.autograd.grad(chain(step, w_grad).sum(), [w_grad]), CHAIN)


def mlp_loss(w, x, y):
    h = torch.relu(x @ w[0] + w[1])
    h = torch.relu(h @ w[2] + w[3])
    return torch.mean(torch.square(h @ w[4] + w[5] - y))


weights = [torch.linspace(-0.5, 0.5, 4 * 64).reshape(4, 64), torch.full((64,), 0.01),
           torch.linspace(-0.12, 0.12, 64 * 64).reshape(64, 64), torch.full((64,), 0.01),
           torch.linspace(-0.12, 0.12, 64 * 2).reshape(64, 2), torch.zeros(2)]
x = torch.linspace(-1.0, 1.0, 64 * 4).reshape(64, 4)
y = torch.linspace(-0.5, 0.5, 64 * 2).reshape(64, 2)
watched = [w.clone().requires_grad_(True) for w in weights]
results["mlp_forward"] = best_ns(lambda: mlp_loss(weights, x, y))


def forward_backward():
    loss = mlp_loss(watched, x, y)
    return loss.detach(), torch.autograd.grad(loss, watched)


results["mlp_forward_backward"] = best_ns(forward_backward)
print(json.dumps(results))
