"""PyTorch's optimizer step on the same weights as bench_optimizers.cpp, for the side-by-side
table of bench/run_bench.sh optimizers.

One weight of 1M float32 values ([1024, 1024]) and the Dense layers of two MLPs
(4-64-64-2 and 784-256-256-10, kernel + bias each), with fixed gradients; times
optimizer.step() with one thread, PyTorch's default implementation (foreach where available)
and, for Adam, fused=True as well. Prints {name: nanoseconds per step} as JSON, names as the
rows of bench_optimizers.cpp ("Adam/1M", ...). Exits quietly when torch is not installed.
"""
import json
import sys
import timeit

try:
    import torch
except ImportError:
    sys.exit(0)

torch.set_num_threads(1)


def params(shapes):
    ps = []
    for shape in shapes:
        p = torch.nn.Parameter(torch.linspace(-0.1, 0.1, int(torch.tensor(shape).prod())).reshape(shape))
        p.grad = torch.full(shape, 1e-3)
        ps.append(p)
    return ps


def mlp(sizes):
    shapes = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        shapes += [(b,), (a, b)]
    return shapes


trees = {"1M": [(1024, 1024)], "mlp_4_64_64_2": mlp([4, 64, 64, 2]), "mlp_784_256_256_10": mlp([784, 256, 256, 10])}
makers = {
    "SGD": lambda p: torch.optim.SGD(p, lr=1e-4),
    "Momentum": lambda p: torch.optim.SGD(p, lr=1e-4, momentum=0.9, nesterov=True),
    "Adam": lambda p: torch.optim.Adam(p, lr=1e-4, eps=1e-5),
    "Adam_fused": lambda p: torch.optim.Adam(p, lr=1e-4, eps=1e-5, fused=True),
    "RMSProp": lambda p: torch.optim.RMSprop(p, lr=1e-4, alpha=0.9),
}
if hasattr(torch.optim, "Adafactor"):
    makers["Adafactor"] = lambda p: torch.optim.Adafactor(p, lr=1e-2)

results = {}
for opt_name, make in makers.items():
    for tree_name, shapes in trees.items():
        try:
            opt = make(params(shapes))
        except (RuntimeError, TypeError, ValueError):
            continue  # e.g. fused=True not supported on this build's CPU path
        opt.step()
        number = 20 if tree_name == "1M" else 2000
        best = min(timeit.repeat(opt.step, number=number, repeat=5))
        results[f"{opt_name}/{tree_name}"] = best / number * 1e9
print(json.dumps(results))
