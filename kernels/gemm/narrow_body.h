// The narrow-C kernels: C = alpha * op(A) * B + beta * C for C with at most kNarrowMaxCols
// columns, operands read in place (see NarrowArgs in microkernel.h). Written once over a vector
// type, like microkernel_body.h, and included by each microkernel_<n>_<isa>.cpp after its `Vec`
// traits (which must also provide reduce_add and reduce_add4, see below).
//
// Why separate kernels: the register tile of microkernel_body.h is NR = 16..32 columns wide,
// so a 2-column C (a value head, a linear layer to 2 actions) would use 2 of its 16 or 32
// lanes. The vectors have to run along k or m instead, whichever op(A) has unit stride along.
//
// Dot form (op(A) = A, rows unit stride in k): each element of C is a dot product
//     C(i, j) = alpha * sum_p A(i, p) * B(p, j) + beta * C(i, j)
// of row i of A with column j of B, both unit stride in p (the driver hands B's columns as
// rows of a k-long buffer: B^T in place, or a copy). R rows x N columns of dot products run
// together, so each A vector load feeds N FMAs and each B vector load feeds R.
//
// Maths per element, fixed whatever R, m or the thread split: lane l accumulates
// fma(A(i, p), B(p, j), .) over p = l, l + W, l + 2W, ... in increasing p (the last, partial
// vector loaded with a lane mask, its missing lanes reading as 0), then Vec::reduce_add (or
// reduce_add4, four at once by the same tree) sums the W lanes by a fixed halving tree
// (lane l + lane l + W/2, and so on), then C = alpha * s (beta == 0: C is not read) or
// alpha * s + beta * C.
//
// What it is not for: wider C (the register tiles of microkernel_body.h), or inclusion
// anywhere but a microkernel_<n>_<isa>.cpp.

template <class Vec, int R, int N>
void narrow_dot_rows(const NarrowArgs<typename Vec::T>& t, int64_t i0) {
  using T = typename Vec::T;
  using V = typename Vec::V;
  constexpr int W = Vec::W;

  V acc[R][N];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < N; ++j) acc[r][j] = Vec::zero();

  const T* a = t.a + i0 * t.lda;
  const int64_t k = t.k;
  int64_t p = 0;
  // The next group's rows are a fresh set of short streams the hardware prefetcher would only
  // pick up after a few misses each; fetch them one group (R * k elements) ahead instead. An
  // address computed as an integer, since past the last group it lies outside A (a prefetch
  // never faults).
  const uintptr_t next_group = reinterpret_cast<uintptr_t>(a) + uintptr_t(R * t.lda) * sizeof(T);
  for (; p + W <= k; p += W) {
    V bv[N];
#pragma GCC unroll 4
    for (int j = 0; j < N; ++j) bv[j] = Vec::load(t.b + j * t.b_j_stride + p);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      if constexpr (W > 1)  // one per cache line, not one per scalar element
        __builtin_prefetch(reinterpret_cast<const void*>(next_group + (r * t.lda + p) * sizeof(T)));
      const V av = Vec::load(a + r * t.lda + p);
#pragma GCC unroll 4
      for (int j = 0; j < N; ++j) acc[r][j] = Vec::fma(av, bv[j], acc[r][j]);
    }
  }
  if (p < k) {
    const typename Vec::Mask mask = Vec::mask_first(static_cast<int>(k - p));
    V bv[N];
#pragma GCC unroll 4
    for (int j = 0; j < N; ++j) bv[j] = Vec::load_masked(t.b + j * t.b_j_stride + p, mask);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const V av = Vec::load_masked(a + r * t.lda + p, mask);
#pragma GCC unroll 4
      for (int j = 0; j < N; ++j) acc[r][j] = Vec::fma(av, bv[j], acc[r][j]);
    }
  }

  // Horizontal sums four accumulators at a time (the same tree as reduce_add, shared shuffles).
  T sums[R * N];
  const V* flat = &acc[0][0];
  constexpr int kGrouped = R * N / 4 * 4;
#pragma GCC unroll 4
  for (int q = 0; q < kGrouped; q += 4) Vec::reduce_add4(flat + q, sums + q);
#pragma GCC unroll 4
  for (int q = kGrouped; q < R * N; ++q) sums[q] = Vec::reduce_add(flat[q]);

  // alpha, beta and ldc in locals: C's type aliases t's fields, so the compiler would reload
  // them after every store.
  const T alpha = t.alpha, beta = t.beta;
  const int64_t ldc = t.ldc;
  T* c = t.c + i0 * ldc;
  if (beta == T(0)) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < N; ++j) c[r * ldc + j] = alpha * sums[r * N + j];
  } else {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < N; ++j) c[r * ldc + j] = alpha * sums[r * N + j] + beta * c[r * ldc + j];
  }
}

// Rows left over after the full groups of R: one group of `rows` < R, peeled by recursion so
// each count gets its own unrolled code.
template <class Vec, int R, int N>
void narrow_dot_tail(const NarrowArgs<typename Vec::T>& t, int64_t i0, int rows) {
  if constexpr (R > 0) {
    if (rows == R) {
      narrow_dot_rows<Vec, R, N>(t, i0);
    } else {
      narrow_dot_tail<Vec, R - 1, N>(t, i0, rows);
    }
  }
}

// N columns. Up to 2 columns get 8 rows per group, wider C 4 rows: 8 to 16 accumulators, enough
// independent FMA chains to cover the FMA latency on two FMA ports, few enough for registers.
template <class Vec, int N>
void narrow_dot_form(const NarrowArgs<typename Vec::T>& t) {
  constexpr int R = N <= 2 ? 8 : 4;
  int64_t i = 0;
  for (; i + R <= t.m; i += R) narrow_dot_rows<Vec, R, N>(t, i);
  if (i < t.m) narrow_dot_tail<Vec, R - 1, N>(t, i, static_cast<int>(t.m - i));
}

// Column form (op(A) = A^T, columns unit stride in m): VM vectors of W rows x N columns of C
// in registers; per k step VM vector loads of A's stored row p and N broadcasts of B(p, j),
// VM * N FMAs. Each C(i, j) is then one FMA chain over p = 0, 1, ..., k - 1 in order, from 0,
// then C = alpha * acc (+ beta * C). The last vector of a block is loaded with a lane mask
// (rows past m are never read). C's columns are strided, so the accumulators go through a
// small buffer and C is written element by element.
template <class Vec, int VM, int N>
void narrow_column_block(const NarrowArgs<typename Vec::T>& t, int64_t i0, int rows) {
  using T = typename Vec::T;
  using V = typename Vec::V;
  constexpr int W = Vec::W;

  V acc[VM][N];
#pragma GCC unroll 8
  for (int v = 0; v < VM; ++v)
#pragma GCC unroll 4
    for (int j = 0; j < N; ++j) acc[v][j] = Vec::zero();

  const typename Vec::Mask last_mask = Vec::mask_first(rows - (VM - 1) * W);
  const T* a = t.a + i0;
  const T* b = t.b;
  const int64_t k = t.k, lda = t.lda, b_p = t.b_p_stride, b_j = t.b_j_stride;
  for (int64_t p = 0; p < k; ++p) {
    V bv[N];
#pragma GCC unroll 4
    for (int j = 0; j < N; ++j) bv[j] = Vec::broadcast(b + j * b_j);
#pragma GCC unroll 8
    for (int v = 0; v < VM; ++v) {
      const V av = v + 1 < VM ? Vec::load(a + v * W) : Vec::load_masked(a + v * W, last_mask);
#pragma GCC unroll 4
      for (int j = 0; j < N; ++j) acc[v][j] = Vec::fma(av, bv[j], acc[v][j]);
    }
    a += lda;
    b += b_p;
  }

  T buffer[N][VM * W];
#pragma GCC unroll 8
  for (int v = 0; v < VM; ++v)
#pragma GCC unroll 4
    for (int j = 0; j < N; ++j) Vec::store(&buffer[j][v * W], acc[v][j]);
  const T alpha = t.alpha, beta = t.beta;
  const int64_t ldc = t.ldc;
  T* c = t.c + i0 * ldc;
  if (rows > VM * W) __builtin_unreachable();  // the callers' guarantee; GCC cannot see it
  if (beta == T(0)) {
    for (int r = 0; r < rows; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < N; ++j) c[r * ldc + j] = alpha * buffer[j][r];
  } else {
    for (int r = 0; r < rows; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < N; ++j) c[r * ldc + j] = alpha * buffer[j][r] + beta * c[r * ldc + j];
  }
}

// The last block, of `rows` < VM * W rows: ceil(rows / W) vectors, by recursion so each count
// gets its own unrolled code.
template <class Vec, int VM, int N>
void narrow_column_tail(const NarrowArgs<typename Vec::T>& t, int64_t i0, int rows) {
  if constexpr (VM > 1) {
    if (rows <= (VM - 1) * Vec::W) {
      narrow_column_tail<Vec, VM - 1, N>(t, i0, rows);
      return;
    }
  }
  narrow_column_block<Vec, VM, N>(t, i0, rows);
}

// N columns: 8 accumulators at least (FMA latency x 2 FMA ports), at most 16.
template <class Vec, int N>
void narrow_column_form(const NarrowArgs<typename Vec::T>& t) {
  constexpr int VM = N == 1 ? 8 : 4;
  constexpr int kBlock = VM * Vec::W;
  int64_t i = 0;
  for (; i + kBlock <= t.m; i += kBlock) narrow_column_block<Vec, VM, N>(t, i, kBlock);
  if (i < t.m) narrow_column_tail<Vec, VM, N>(t, i, static_cast<int>(t.m - i));
}

template <class Vec>
void narrow_dispatch(const NarrowArgs<typename Vec::T>& t) {
  if (t.a_transposed) {
    switch (t.n) {
      case 1: narrow_column_form<Vec, 1>(t); break;
      case 2: narrow_column_form<Vec, 2>(t); break;
      case 3: narrow_column_form<Vec, 3>(t); break;
      default: narrow_column_form<Vec, 4>(t); break;
    }
    return;
  }
  switch (t.n) {
    case 1: narrow_dot_form<Vec, 1>(t); break;
    case 2: narrow_dot_form<Vec, 2>(t); break;
    case 3: narrow_dot_form<Vec, 3>(t); break;
    default: narrow_dot_form<Vec, 4>(t); break;
  }
}
