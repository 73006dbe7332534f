// The small-k kernel: C = alpha * op(A) * op(B) + beta * C for k <= kSmallKMax, then the
// epilogue, four rows of C at a time (see SmallKArgs in microkernel.h). Written once over a vector
// type, like microkernel_body.h, and included by each microkernel_<n>_<isa>.cpp after its `Vec`
// traits.
//
// Why a kernel of its own: a Dense layer's first GEMM (k = the observation's 3 or 4 features)
// and the backward through a narrow head (k = 1 or 2 actions, the relu mask in the epilogue)
// make a [rows, 64] C from a few FMAs per element. Through the register tile, the accumulators
// are handed to the epilogue's store loop in memory and C passes through the tile grid in
// 12 x 32 blocks (the AVX-512 tile of the time): on a Zen 4 core a [256, 1] x [1, 64] product
// with the mask took 7,000 cycles (TSC) where a plain loop streaming the rows takes about 3,400. Here every vector of C is
// computed, finished and stored while its k products are still in registers, and each load of
// op(B)'s k vectors serves four rows (measured with one row per load: 4,000 cycles for that
// product, but slower than the register tile on a plain [64, 4] x [4, 64]).
//
// Bits: per element the register tile's sequence exactly (acc from 0 by Vec::fma over p in
// increasing order, then store_with_epilogue's alpha, beta, bias, relu and mask steps), so
// switching paths changes nothing (tests/kernels/test_gemm_epilogue.cpp compares the two bit for
// bit on every micro-kernel).
//
// What it is not for: k > kSmallKMax (the register tile), C of at most kNarrowMaxCols columns
// (narrow_body.h), or inclusion anywhere but a microkernel_<n>_<isa>.cpp.

// The fields one row group reads, copied out of SmallKArgs before its first store: the stores
// go through may_alias vector types, so the compiler would otherwise reload c, ldc and alpha
// from the argument struct after every row's store (measured on Zen 4: about a third of the
// k = 3 product's time).
template <typename T>
struct SmallKRows {
  const T* b;
  int64_t ldb;
  T* c;            // row i of C
  int64_t ldc;
  const T* bias;   // null: none
  const T* mask;   // row i of the mask; null: none
  bool alpha_one;  // alpha == 1: no multiply (acc * 1 is acc; acc comes from an FMA, so it is
                   // never a signalling NaN)
  bool read_c;     // beta != 0
};

// One vector of columns j .. j + W - 1 (the first `lanes` of them when partial) in R rows of C
// starting at the group's first row: op(B)'s K vectors are loaded once for the R rows.
template <class Vec, int R, int K, bool kBias, bool kRelu, bool kMask, bool kPartial>
[[gnu::always_inline]] inline void small_k_vector(const SmallKRows<typename Vec::T>& g,
                                                  const typename Vec::V (*a)[K], int64_t j, typename Vec::Mask lanes,
                                                  typename Vec::V alpha, typename Vec::V beta) {
  using T = typename Vec::T;
  using V = typename Vec::V;
  const auto load = [lanes](const T* p) { return kPartial ? Vec::load_masked(p, lanes) : Vec::load(p); };
  V b[K];
#pragma GCC unroll 4
  for (int p = 0; p < K; ++p) b[p] = load(g.b + p * g.ldb + j);
  V bias{};
  if constexpr (kBias) bias = load(g.bias + j);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    T* out = g.c + r * g.ldc + j;
    V acc = Vec::zero();
#pragma GCC unroll 4
    for (int p = 0; p < K; ++p) acc = Vec::fma(a[r][p], b[p], acc);
    V x = g.alpha_one ? acc : Vec::mul(alpha, acc);
    if (g.read_c) x = Vec::fma(alpha, acc, Vec::mul(beta, load(out)));
    if constexpr (kBias) x = Vec::add(x, bias);
    if constexpr (kRelu) x = Vec::relu(x);
    if constexpr (kMask) x = Vec::where_positive(load(g.mask + r * g.ldc + j), x);
    if constexpr (kPartial)
      Vec::store_masked(out, lanes, x);
    else
      Vec::store(out, x);
  }
}

// R rows of C from row i: their A values broadcast once, then C's vectors left to right.
template <class Vec, int R, int K, bool kBias, bool kRelu, bool kMask>
inline void small_k_row_group(const SmallKArgs<typename Vec::T>& s, int64_t i, int64_t full, int rest,
                              typename Vec::Mask lanes, typename Vec::V alpha, typename Vec::V beta, bool read_c) {
  using T = typename Vec::T;
  constexpr int W = Vec::W;
  typename Vec::V a[R][K];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < K; ++p) a[r][p] = Vec::set1(s.a[(i + r) * s.a_row_stride + p * s.a_p_stride]);
  const SmallKRows<T> g{s.b,    s.ldb,  s.c + i * s.ldc, s.ldc, s.bias, s.mask ? s.mask + i * s.ldc : nullptr,
                        s.alpha == T(1), read_c};
  for (int64_t j = 0; j < full; j += W)
    small_k_vector<Vec, R, K, kBias, kRelu, kMask, false>(g, a, j, lanes, alpha, beta);
  if (rest > 0) small_k_vector<Vec, R, K, kBias, kRelu, kMask, true>(g, a, full, lanes, alpha, beta);
}

template <class Vec, int K, bool kBias, bool kRelu, bool kMask>
void small_k_rows(const SmallKArgs<typename Vec::T>& s) {
  using T = typename Vec::T;
  using V = typename Vec::V;
  constexpr int W = Vec::W;
  constexpr int kRows = 4;  // rows sharing each load of op(B)
  const int64_t full = s.n / W * W;
  const int rest = static_cast<int>(s.n - full);
  const typename Vec::Mask lanes = Vec::mask_first(rest > 0 ? rest : W);
  const V alpha = Vec::set1(s.alpha);
  const V beta = Vec::set1(s.beta);
  const bool read_c = s.beta != T(0);
  int64_t i = 0;
  for (; i + kRows <= s.m; i += kRows)
    small_k_row_group<Vec, kRows, K, kBias, kRelu, kMask>(s, i, full, rest, lanes, alpha, beta, read_c);
  for (; i < s.m; ++i) small_k_row_group<Vec, 1, K, kBias, kRelu, kMask>(s, i, full, rest, lanes, alpha, beta, read_c);
}

// small_k_rows for the call's k and epilogue steps: a switch of direct calls, as
// dispatch_epilogue (no branch per vector for a step the call does not have).
template <class Vec, int K>
void small_k_epilogue_dispatch(const SmallKArgs<typename Vec::T>& s) {
  switch ((s.bias != nullptr) | (s.relu << 1) | ((s.mask != nullptr) << 2)) {
    case 0: small_k_rows<Vec, K, false, false, false>(s); break;
    case 1: small_k_rows<Vec, K, true, false, false>(s); break;
    case 2: small_k_rows<Vec, K, false, true, false>(s); break;
    case 3: small_k_rows<Vec, K, true, true, false>(s); break;
    case 4: small_k_rows<Vec, K, false, false, true>(s); break;
    case 5: small_k_rows<Vec, K, true, false, true>(s); break;
    case 6: small_k_rows<Vec, K, false, true, true>(s); break;
    default: small_k_rows<Vec, K, true, true, true>(s); break;
  }
}

template <class Vec>
void small_k_dispatch(const SmallKArgs<typename Vec::T>& s) {
  static_assert(kSmallKMax == 4, "one case per k below");
  switch (s.k) {
    case 1: small_k_epilogue_dispatch<Vec, 1>(s); break;
    case 2: small_k_epilogue_dispatch<Vec, 2>(s); break;
    case 3: small_k_epilogue_dispatch<Vec, 3>(s); break;
    default: small_k_epilogue_dispatch<Vec, 4>(s); break;
  }
}
