"""Per-op overhead of PyTorch eager for the side-by-side table of bench/run_bench.sh elementwise.

Times add, mul, x * 0.5 and relu on a 1-element and a 64 x 64 float32 tensor with one thread,
matching BM_overhead_* in bench_elementwise.cpp. Prints {name: nanoseconds per call} as JSON.
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
results = {}
for label, shape in (("1", (1,)), ("4096", (64, 64))):
    x = torch.full(shape, 0.5)
    for name, fn in (("add", lambda: torch.add(x, x)), ("mul", lambda: torch.mul(x, x)),
                     ("mul_scalar", lambda: x * 0.5), ("relu", lambda: torch.relu(x))):
        number = 20000
        best = min(timeit.repeat(fn, number=number, repeat=5))
        results[f"overhead_{name}/{label}"] = best / number * 1e9
print(json.dumps(results))
