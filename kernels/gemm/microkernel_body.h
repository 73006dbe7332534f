// The register-tile loop shared by every micro-kernel, written once over a vector type.
//
// Each microkernel_<n>_<isa>.cpp includes this inside an anonymous namespace after defining a
// `Vec` traits struct (element type T, vector type V, lane count W, mask type Mask, and
// zero/load/load_masked/broadcast/fma/mul/set1/store/store_masked/mask_first). Being in an
// anonymous namespace matters: these templates are compiled with different -m flags in each
// file, and internal linkage stops the linker from merging an AVX-512 copy into code that must
// run on a CPU without it.
//
// The tile is M x (NV * W): M rows of A broadcast one element at a time, NV vectors of a B row
// loaded per step, M * NV accumulators kept in registers for the whole k loop. With M and NV
// template parameters every partial tile (m < MR, n < NR) gets its own fully unrolled code, so
// an edge tile costs what its size costs. Only the last vector of a row can be partial; it is
// loaded and stored with a lane mask so no memory past column n is touched.
//
// Every loop over i and v carries an unroll pragma: if any of them (the epilogue's, say) is
// left rolled, GCC must keep the accumulators addressable and stores all 24 of them to the
// stack on every k step, which halves the kernel's speed.
//
// Maths per element, in this order: acc = fma(A(i,p), B(p,j), acc) for p = 0..k-1 from acc = 0,
// then C = alpha * acc (beta == 0) or C = fma(alpha, acc, beta * C).
//
// What it is not for: inclusion anywhere but a microkernel_<n>_<isa>.cpp (it needs that file's
// Vec and -m flags), or C with at most kNarrowMaxCols columns (narrow_body.h).

// The end of a tile shorter than MR that has an epilogue (full-height tiles apply theirs in
// registers, store_tile_epilogue below) (kernels/gemm.h: GemmEpilogue): each value is formed
// as in tile_kernel's plain stores, then the bias is added, relu applied and the mask applied,
// each its own step, so the bits are those of the GEMM followed by the separate ops. One copy
// per combination of steps (and full or partial last vector), so none of them is a branch per
// vector; the rows are a plain loop, the M of the tile being only a bound. The accumulators
// arrive as a copy: taking the address of tile_kernel's own would make GCC keep them in memory
// through the k loop. The lane mask is rebuilt here rather than passed in (see dispatch_epilogue).
template <class Vec, int NV, bool kBias, bool kRelu, bool kMask, bool kFull>
[[gnu::noinline]] void store_with_epilogue(const TileArgs<typename Vec::T>& t, const typename Vec::V* acc, int m) {
  using T = typename Vec::T;
  using V = typename Vec::V;
  constexpr int W = Vec::W;
  const typename Vec::Mask last_mask = Vec::mask_first(t.n - (NV - 1) * W);
  const V alpha = Vec::set1(t.alpha);
  const V beta = Vec::set1(t.beta);
  const bool read_c = t.beta != T(0);
  V bias[NV];
  if constexpr (kBias) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      bias[v] = !kFull && v == NV - 1 ? Vec::load_masked(t.bias + v * W, last_mask) : Vec::load(t.bias + v * W);
  }
  for (int i = 0; i < m; ++i) {
    T* row = t.c + i * t.ldc;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const bool partial = !kFull && v == NV - 1;
      V x = Vec::mul(alpha, acc[i * NV + v]);
      if (read_c) {
        const V old = Vec::mul(beta, partial ? Vec::load_masked(row + v * W, last_mask) : Vec::load(row + v * W));
        x = Vec::fma(alpha, acc[i * NV + v], old);
      }
      if constexpr (kBias) x = Vec::add(x, bias[v]);
      if constexpr (kRelu) x = Vec::relu(x);
      if constexpr (kMask) {
        const T* mask = t.mask + i * t.ldc + v * W;
        x = Vec::where_positive(partial ? Vec::load_masked(mask, last_mask) : Vec::load(mask), x);
      }
      if (partial)
        Vec::store_masked(row + v * W, last_mask, x);
      else
        Vec::store(row + v * W, x);
    }
  }
}

// store_with_epilogue for the tile's combination of steps: a switch of direct calls. The first
// version called through a table of function pointers with the lane mask as a vector argument;
// on Zen 3 every GEMM call with an epilogue then cost about 120 ns more than without one, even
// a single 1 x 16 tile (measured stand-alone; the cause was not pinned down without performance
// counters), which was half of a 4-row policy forward's GEMM time.
template <class Vec, int NV>
void dispatch_epilogue(const TileArgs<typename Vec::T>& t, const typename Vec::V* acc, int m, bool full) {
  const int which = (t.bias != nullptr) | (t.relu << 1) | ((t.mask != nullptr) << 2) | (full << 3);
  switch (which) {
#define CTRAX_EPI_CASE(w) \
  case w: store_with_epilogue<Vec, NV, (w & 1) != 0, (w & 2) != 0, (w & 4) != 0, (w & 8) != 0>(t, acc, m); break;
    CTRAX_EPI_CASE(0) CTRAX_EPI_CASE(1) CTRAX_EPI_CASE(2) CTRAX_EPI_CASE(3) CTRAX_EPI_CASE(4) CTRAX_EPI_CASE(5)
    CTRAX_EPI_CASE(6) CTRAX_EPI_CASE(7) CTRAX_EPI_CASE(8) CTRAX_EPI_CASE(9) CTRAX_EPI_CASE(10) CTRAX_EPI_CASE(11)
    CTRAX_EPI_CASE(12) CTRAX_EPI_CASE(13) CTRAX_EPI_CASE(14) CTRAX_EPI_CASE(15)
#undef CTRAX_EPI_CASE
  }
}

// The stores of a full-height tile whose epilogue steps (kEpi: 1 bias, 2 relu, 4 mask) are known
// at compile time, applied to the accumulators in registers: the same steps in the same order
// as store_with_epilogue, so the same bits. Inlined into tile_kernel (the accumulators stay in
// registers; an out-of-line call would need them in memory, which is why store_with_epilogue
// takes a copy). Only full-height tiles get these copies: they are nearly all of a large C's
// tiles, and one per (rows of A, vectors, steps) keeps the code size in bounds.
// (Measured stand-alone on Zen 4, [256, 64] x [64, 64], medians of 15 x 200 calls in TSC
// cycles: with bias and relu 53,600 -> 51,900, with relu's mask 55,500 -> 53,400; plain 51,600.)
template <class Vec, int M, int NV, int kEpi>
[[gnu::always_inline]] inline void store_tile_epilogue(const TileArgs<typename Vec::T>& t,
                                                       const typename Vec::V (&acc)[M][NV], bool full,
                                                       typename Vec::Mask last_mask) {
  using T = typename Vec::T;
  using V = typename Vec::V;
  constexpr int W = Vec::W;
  constexpr bool kBias = (kEpi & 1) != 0, kRelu = (kEpi & 2) != 0, kMask = (kEpi & 4) != 0;
  const V alpha = Vec::set1(t.alpha);
  const V beta = Vec::set1(t.beta);
  const bool read_c = t.beta != T(0);
  const int64_t ldc = t.ldc;
  T* c = t.c;
  const T* mask_base = t.mask;
  V bias[NV];
  if constexpr (kBias) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      bias[v] = !full && v == NV - 1 ? Vec::load_masked(t.bias + v * W, last_mask) : Vec::load(t.bias + v * W);
  }
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) {
    T* row = c + i * ldc;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const bool partial = !full && v == NV - 1;
      V x = Vec::mul(alpha, acc[i][v]);
      if (read_c) {
        const V old = Vec::mul(beta, partial ? Vec::load_masked(row + v * W, last_mask) : Vec::load(row + v * W));
        x = Vec::fma(alpha, acc[i][v], old);
      }
      if constexpr (kBias) x = Vec::add(x, bias[v]);
      if constexpr (kRelu) x = Vec::relu(x);
      if constexpr (kMask) {
        const T* mask = mask_base + i * ldc + v * W;
        x = Vec::where_positive(partial ? Vec::load_masked(mask, last_mask) : Vec::load(mask), x);
      }
      if (partial)
        Vec::store_masked(row + v * W, last_mask, x);
      else
        Vec::store(row + v * W, x);
    }
  }
}

// kEpi < 0: the epilogue, if any, is read from t at run time (store_with_epilogue); kEpi >= 0:
// t's epilogue is exactly kEpi's steps (store_tile_epilogue).
template <class Vec, int M, int NV, bool kRowsA, int kEpi = -1>
void tile_kernel(const TileArgs<typename Vec::T>& t) {
  using T = typename Vec::T;
  using V = typename Vec::V;
  constexpr int W = Vec::W;

  V acc[M][NV];
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[i][v] = Vec::zero();

  // C is written at the end; start pulling its lines in now so the stores do not stall. A row
  // of the tile spans NV * W elements, two or three cache lines: fetch its first and last.
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) {
    __builtin_prefetch(t.c + i * t.ldc, 1, 3);
    __builtin_prefetch(t.c + i * t.ldc + t.n - 1, 1, 3);
  }

  // kRowsA: A is read as M row streams a_rows[i][p] (A in place, row-major); otherwise as one
  // stream of M-wide columns a[p * a_stride + i].
  const T* a_rows[M];
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) a_rows[i] = t.a + i * t.a_row_stride;
  const T* a = t.a;
  const T* b = t.b;
  const int64_t a_stride = t.a_stride;
  const int64_t b_stride = t.b_stride;
  const int last_lanes = t.n - (NV - 1) * W;  // 1..W
  const typename Vec::Mask last_mask = Vec::mask_first(last_lanes);

  // Two copies of the k loop: full tiles load B unmasked (a mask register write per step
  // would take a slot on port 5, one of the two FMA ports), partial ones mask the last vector.
  const int64_t k = t.k;
  if (last_lanes == W) {
    for (int64_t p = 0; p < k; ++p) {
      V bv[NV];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) bv[v] = Vec::load(b + v * W);
#pragma GCC unroll 16
      for (int i = 0; i < M; ++i) {
        const V ai = kRowsA ? Vec::broadcast(a_rows[i] + p) : Vec::broadcast(a + i);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[i][v] = Vec::fma(ai, bv[v], acc[i][v]);
      }
      a += a_stride;
      b += b_stride;
    }
  } else {
    for (int64_t p = 0; p < k; ++p) {
      V bv[NV];
#pragma GCC unroll 8
      for (int v = 0; v + 1 < NV; ++v) bv[v] = Vec::load(b + v * W);
      bv[NV - 1] = Vec::load_masked(b + (NV - 1) * W, last_mask);
#pragma GCC unroll 16
      for (int i = 0; i < M; ++i) {
        const V ai = kRowsA ? Vec::broadcast(a_rows[i] + p) : Vec::broadcast(a + i);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[i][v] = Vec::fma(ai, bv[v], acc[i][v]);
      }
      a += a_stride;
      b += b_stride;
    }
  }

  // ldc in a local: C's type aliases t's fields, so after each store to C the compiler would
  // reload t.ldc, and those loads wait behind the stores.
  const V alpha = Vec::set1(t.alpha);
  const int64_t ldc = t.ldc;
  T* c = t.c;
  // A masked store only where the last vector is partial: AMD's Zen cores take about a dozen
  // cycles per vmaskmovps store, which cost more than the whole k loop of a k <= 8 tile.
  const bool full = last_lanes == W;
  if constexpr (kEpi >= 0) {
    store_tile_epilogue<Vec, M, NV, kEpi>(t, acc, full, last_mask);
    return;
  }
  if (t.bias != nullptr || t.relu || t.mask != nullptr) [[unlikely]] {
    V copy[M * NV];
#pragma GCC unroll 16
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) copy[i * NV + v] = acc[i][v];
    dispatch_epilogue<Vec, NV>(t, copy, M, full);
    return;
  }
  if (t.beta == T(0)) {
#pragma GCC unroll 16
    for (int i = 0; i < M; ++i) {
      T* row = c + i * ldc;
#pragma GCC unroll 16
      for (int v = 0; v + 1 < NV; ++v) Vec::store(row + v * W, Vec::mul(alpha, acc[i][v]));
      if (full)
        Vec::store(row + (NV - 1) * W, Vec::mul(alpha, acc[i][NV - 1]));
      else
        Vec::store_masked(row + (NV - 1) * W, last_mask, Vec::mul(alpha, acc[i][NV - 1]));
    }
  } else {
    const V beta = Vec::set1(t.beta);
#pragma GCC unroll 16
    for (int i = 0; i < M; ++i) {
      T* row = c + i * ldc;
#pragma GCC unroll 16
      for (int v = 0; v + 1 < NV; ++v) {
        const V old = Vec::mul(beta, Vec::load(row + v * W));
        Vec::store(row + v * W, Vec::fma(alpha, acc[i][v], old));
      }
      if (full) {
        const V old = Vec::mul(beta, Vec::load(row + (NV - 1) * W));
        Vec::store(row + (NV - 1) * W, Vec::fma(alpha, acc[i][NV - 1], old));
      } else {
        const V old = Vec::mul(beta, Vec::load_masked(row + (NV - 1) * W, last_mask));
        Vec::store_masked(row + (NV - 1) * W, last_mask, Vec::fma(alpha, acc[i][NV - 1], old));
      }
    }
  }
}

// KernelTable<Vec, MR, NVMAX>::entry[rows_a][m - 1][nv - 1] is the tile kernel for m rows and
// nv vectors, reading A as rows (rows_a) or as column panels; tile_dispatch() picks it from the tile's (m, n).
template <class Vec, int MR, int NVMAX>
struct KernelTable {
  MicroKernel<typename Vec::T> entry[2][MR][NVMAX];
};

template <class Vec, int MR, int NVMAX, int M, int NV>
constexpr void fill_table(KernelTable<Vec, MR, NVMAX>& table) {
  table.entry[0][M - 1][NV - 1] = &tile_kernel<Vec, M, NV, false>;
  table.entry[1][M - 1][NV - 1] = &tile_kernel<Vec, M, NV, true>;
  if constexpr (NV < NVMAX) {
    fill_table<Vec, MR, NVMAX, M, NV + 1>(table);
  } else if constexpr (M < MR) {
    fill_table<Vec, MR, NVMAX, M + 1, 1>(table);
  }
}

template <class Vec, int MR, int NVMAX>
constexpr KernelTable<Vec, MR, NVMAX> make_table() {
  KernelTable<Vec, MR, NVMAX> table{};
  fill_table<Vec, MR, NVMAX, 1, 1>(table);
  return table;
}

// EpilogueTable<Vec, MR, NVMAX>::entry[rows_a][nv - 1][epi - 1]: the full-height (m == MR) tile
// kernel with epilogue steps epi (1 bias, 2 relu, 4 mask; 1..7).
template <class Vec, int MR, int NVMAX>
struct EpilogueTable {
  MicroKernel<typename Vec::T> entry[2][NVMAX][7];
};

template <class Vec, int MR, int NVMAX, int NV, int kEpi>
constexpr void fill_epilogue_table(EpilogueTable<Vec, MR, NVMAX>& table) {
  table.entry[0][NV - 1][kEpi - 1] = &tile_kernel<Vec, MR, NV, false, kEpi>;
  table.entry[1][NV - 1][kEpi - 1] = &tile_kernel<Vec, MR, NV, true, kEpi>;
  if constexpr (kEpi < 7) {
    fill_epilogue_table<Vec, MR, NVMAX, NV, kEpi + 1>(table);
  } else if constexpr (NV < NVMAX) {
    fill_epilogue_table<Vec, MR, NVMAX, NV + 1, 1>(table);
  }
}

template <class Vec, int MR, int NVMAX>
constexpr EpilogueTable<Vec, MR, NVMAX> make_epilogue_table() {
  EpilogueTable<Vec, MR, NVMAX> table{};
  fill_epilogue_table<Vec, MR, NVMAX, 1, 1>(table);
  return table;
}

template <class Vec, int MR, int NVMAX>
void tile_dispatch(const TileArgs<typename Vec::T>& t) {
  static constexpr KernelTable<Vec, MR, NVMAX> table = make_table<Vec, MR, NVMAX>();
  static constexpr EpilogueTable<Vec, MR, NVMAX> epilogue_table = make_epilogue_table<Vec, MR, NVMAX>();
  const int nv = (t.n + Vec::W - 1) / Vec::W;
  const int epi = (t.bias != nullptr) | (t.relu << 1) | ((t.mask != nullptr) << 2);
  if (epi != 0 && t.m == MR) {
    epilogue_table.entry[t.a_row_stride != 0][nv - 1][epi - 1](t);
    return;
  }
  table.entry[t.a_row_stride != 0][t.m - 1][nv - 1](t);
}
