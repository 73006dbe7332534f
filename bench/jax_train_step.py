"""The MLP 4-64-64-2 training step of bench_train_step.cpp in JAX: forward, backward and Adam
(written out, PyTorch's defaults) under one jax.jit, batch 64, float32, one CPU thread. XLA
computes on the CPU with subnormals flushed to zero (jax.jit(lambda a, b: a * b) gives 0 for
1e-20 * 1e-20), so its counterpart is the benchmark's `_flushed` rows.

Prints one line: the median time per step in microseconds over `--repetitions` runs of
`--steps` steps each. bench/run_train_step.sh runs it interleaved with the ctrax benchmark.
"""
import argparse
import os
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402


def init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return [jax.random.uniform(k1, (4, 64), minval=-0.5, maxval=0.5), jnp.full((64,), 0.01),
            jax.random.uniform(k2, (64, 64), minval=-0.12, maxval=0.12), jnp.full((64,), 0.01),
            jax.random.uniform(k3, (64, 2), minval=-0.12, maxval=0.12), jnp.zeros((2,))]


def loss(w, x, y):
    h = jax.nn.relu(x @ w[0] + w[1])
    h = jax.nn.relu(h @ w[2] + w[3])
    return jnp.mean(jnp.square(h @ w[4] + w[5] - y))


@jax.jit
def step(w, m, v, t, x, y):
    value, g = jax.value_and_grad(loss)(w, x, y)
    b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
    t = t + 1
    m = [b1 * mi + (1 - b1) * gi for mi, gi in zip(m, g)]
    v = [b2 * vi + (1 - b2) * gi * gi for vi, gi in zip(v, g)]
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    w = [wi - lr * (mi / c1) / (jnp.sqrt(vi / c2) + eps) for wi, mi, vi in zip(w, m, v)]
    return w, m, v, t, value


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repetitions", type=int, default=5)
    args = parser.parse_args()
    w = init(jax.random.PRNGKey(0))
    m = [jnp.zeros_like(p) for p in w]
    v = [jnp.zeros_like(p) for p in w]
    t = jnp.zeros((), jnp.float32)
    # Sixteen batches cycled, as bench_train_step.cpp does (one fixed batch would be fitted).
    batches = []
    for i in range(16):
        kx, ky = jax.random.split(jax.random.PRNGKey(100 + i))
        batches.append((jax.random.uniform(kx, (64, 4), minval=-1.0, maxval=1.0),
                        jax.random.uniform(ky, (64, 2), minval=-0.5, maxval=0.5)))
    for i in range(20):  # compile and warm up
        w, m, v, t, value = step(w, m, v, t, *batches[i % 16])
    value.block_until_ready()
    times = []
    for _ in range(args.repetitions):
        start = time.perf_counter()
        for i in range(args.steps):
            w, m, v, t, value = step(w, m, v, t, *batches[i % 16])
        value.block_until_ready()
        times.append((time.perf_counter() - start) / args.steps * 1e6)
    times.sort()
    print(f"{times[len(times) // 2]:.2f}")


if __name__ == "__main__":
    main()
