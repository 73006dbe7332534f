// RolloutBuffer: see rollout_buffer.h.
#include "rollout_buffer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "../../base/error.h"
#include "../../tensor/ops.h"
#include "../../tensor/trace.h"

namespace ctrax {

namespace {

// The value network over the real rows of the [K, L + 1] grid (each piece's steps and its final
// observation), at most kValueChunkRows rows a call: the activations of a whole epoch's grid
// (4096 rows x 64 units is 1 MiB a layer) were the peak of a run's memory, and the grid's
// padding (pieces shorter than the longest; about 15% of a Pendulum epoch's grid) is not worth
// a value. A call's rows are rounded up to a multiple of kValueChunkAlign by repeating its first
// row, so that the calls take a handful of shapes (a compiled value step records a plan per
// shape). Each row's V is computed as in any other call (row-independent networks), so V is
// the same; padding positions get 0, which no advantage estimator reads.
constexpr int64_t kValueChunkRows = 1024;
constexpr int64_t kValueChunkAlign = 64;

Tensor grid_values(const Tensor& observations, const std::vector<Trajectory>& pieces,
                   const std::function<Tensor(const Tensor&)>& values) {
  const int64_t k = observations.shape()[0], columns = observations.shape()[1];
  std::vector<int64_t> real;
  for (int64_t i = 0; i < k; ++i)
    for (int64_t t = 0; t <= pieces[static_cast<size_t>(i)].length(); ++t) real.push_back(i * columns + t);
  Shape flat_shape = observations.shape();
  flat_shape.erase(0);
  flat_shape[0] = k * columns;
  const Tensor flat = observations.contiguous().reshape(flat_shape);
  std::vector<float> grid(static_cast<size_t>(k * columns), 0.0f);
  const auto n = static_cast<int64_t>(real.size());
  for (int64_t start = 0; start < n; start += kValueChunkRows) {
    const int64_t count = std::min(kValueChunkRows, n - start);
    const int64_t padded = std::min(kValueChunkRows, (count + kValueChunkAlign - 1) / kValueChunkAlign * kValueChunkAlign);
    std::vector<int64_t> index(real.begin() + start, real.begin() + start + count);
    index.resize(static_cast<size_t>(padded), real[static_cast<size_t>(start)]);
    Shape chunk_shape = flat_shape;
    chunk_shape[0] = padded;
    chunk_shape.insert(0, 1);  // [1, rows, ...]: one long "piece"
    const Tensor chunk = index_select(flat, 0, from_vector(index, Shape{padded})).reshape(chunk_shape);
    const Tensor v = values(chunk).to(DType::float32).contiguous();
    CTRAX_REQUIRE(v.shape() == (Shape{1, padded}), "RolloutBuffer: the value function gave ", to_string(v.shape()),
                  " for observations ", to_string(chunk.shape()), "; expected ", to_string(Shape{1, padded}));
    const float* vs = v.data<float>();
    for (int64_t j = 0; j < count; ++j) grid[static_cast<size_t>(real[static_cast<size_t>(start + j)])] = vs[j];
  }
  return from_vector(grid, Shape{k, columns});
}

}  // namespace

RolloutBuffer::RolloutBuffer(const std::vector<Trajectory>& pieces, const std::function<Tensor(const Tensor&)>& values,
                             const AdvantageEstimator& estimator, double gamma) {
  CTRAX_REQUIRE(!pieces.empty(), "RolloutBuffer: the collection holds no trajectory");
  std::vector<TrajectorySlice> slices;
  for (const Trajectory& t : pieces) slices.push_back(TrajectorySlice{&t, 0, t.length() + 1, 1});
  const TimeStepBatch b = stack_slices(slices, std::nullopt, /*pad_to_power_of_two=*/false);  // [K, L + 1]
  const Tensor observations = b.observation.to(DType::float32);
  const Tensor v = grid_values(observations, pieces, values);  // [K, L + 1]
  const Tensor a = estimator(AdvantageInputs{b.reward, b.return_, v, b.done, b.mask, b.discount_mask}, gamma, 1);
  const int64_t k = b.reward.shape()[0], steps = b.reward.shape()[1] - 1;
  // The steps' positions in the [K, L] grid, piece by piece.
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < k; ++i)
    for (int64_t t = 0; t < pieces[static_cast<size_t>(i)].length(); ++t) rows.push_back(i * (steps + 1) + t);
  n_ = static_cast<int64_t>(rows.size());
  const Tensor index = from_vector(rows, Shape{n_});
  // [K, L + 1, ...] -> [K (L + 1), ...], then the step rows.
  auto flat_rows = [&](const Tensor& t) {
    Shape shape = t.shape();
    const int64_t lead = shape[0] * shape[1];
    shape.erase(0);
    shape[0] = lead;
    return index_select(t.contiguous().reshape(shape), 0, index).contiguous();
  };
  // The estimator's [K, L] advantages against the [K, L + 1] grid: one column of padding.
  const Tensor a_grid = pad(a.to(DType::float32), {{0, 0}, {0, 1}});
  observations_ = flat_rows(observations);
  actions_ = flat_rows(b.action);
  dist_inputs_ = flat_rows(b.dist_inputs);
  advantages_ = flat_rows(a_grid);
  old_values_ = flat_rows(v);
  value_targets_ = add(old_values_, advantages_).contiguous();
}

std::vector<Tensor> RolloutBuffer::minibatch_indices(int64_t n, int64_t minibatch_size, Key key) {
  CTRAX_REQUIRE(n >= 1 && minibatch_size >= 1, "RolloutBuffer::minibatch_indices: n and minibatch_size must be >= 1, "
                "got ", n, " and ", minibatch_size);
  const Tensor order = permutation(key, n);
  std::vector<Tensor> out;
  // Views of the one permutation (a slice of a 1-D tensor is contiguous): no copy per minibatch.
  for (int64_t start = 0; start < n; start += minibatch_size)
    out.push_back(order.slice(0, start, std::min(n, start + minibatch_size)));
  return out;
}

Tensor RolloutBuffer::select(const Tensor& field, const Tensor& rows) {
  return index_select(field, 0, rows).unsqueeze(1).contiguous();
}

namespace {

// normalize_minibatch's arithmetic over n values read as doubles, written as floats (out may be
// the storage `in` is read from: each element is read before it is written, in both passes).
template <typename In>
void normalize_values(const In* in, float* out, size_t n, double epsilon, double factor) {
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(in[i]);
  const double mean = sum / static_cast<double>(n);
  double square = 0;
  for (size_t i = 0; i < n; ++i) square += (static_cast<double>(in[i]) - mean) * (static_cast<double>(in[i]) - mean);
  const double std = std::sqrt(square / static_cast<double>(n));
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(factor * (static_cast<double>(in[i]) - mean) / (std + epsilon));
}

// rows of field into out as a [B, 1, ...] tensor: out itself when it is only this caller's and
// of that shape and dtype, else a fresh tensor. rows are checked by the caller.
void gather_rows(const Tensor& field, const int64_t* rows, int64_t b, Tensor& out) {
  Shape shape = field.shape();
  shape[0] = 1;
  shape.insert(0, b);  // [B, 1, ...]
  const bool reusable = out.defined() && out.storage().use_count() == 1 && out.shape() == shape &&
                        out.dtype() == field.dtype() && out.device().is_cpu() && !detail::is_traced(out);
  if (!reusable) out = empty(shape, field.dtype());
  const Tensor source = field.contiguous();
  const size_t row_bytes = static_cast<size_t>(source.numel() / std::max<int64_t>(1, source.shape()[0])) *
                           source.element_size();
  const auto* from = static_cast<const unsigned char*>(source.raw_data());
  auto* to = static_cast<unsigned char*>(out.raw_data());
  // Rows of one to four 4-byte elements (a Pendulum minibatch's fields) are copied with a size
  // known at compile time, which the compiler turns into a move or two: a memcpy call per row
  // cost about as much as the rest of the gathering.
  const auto copy = [&](auto bytes) {
    constexpr size_t n = decltype(bytes)::value;
    for (int64_t i = 0; i < b; ++i) std::memcpy(to + static_cast<size_t>(i) * n, from + static_cast<size_t>(rows[i]) * n, n);
  };
  switch (row_bytes) {
    case 4: copy(std::integral_constant<size_t, 4>{}); break;
    case 8: copy(std::integral_constant<size_t, 8>{}); break;
    case 12: copy(std::integral_constant<size_t, 12>{}); break;
    case 16: copy(std::integral_constant<size_t, 16>{}); break;
    default:
      for (int64_t i = 0; i < b; ++i)
        std::memcpy(to + static_cast<size_t>(i) * row_bytes, from + static_cast<size_t>(rows[i]) * row_bytes, row_bytes);
  }
}

}  // namespace

void RolloutMinibatch::gather(const RolloutBuffer& buffer, const Tensor& rows, const Tensor& advantages,
                              const Tensor& value_targets, const Tensor& old_values,
                              std::optional<std::pair<double, double>> normalize) {
  const char* who = "RolloutMinibatch::gather";
  CTRAX_REQUIRE(rows.defined() && rows.rank() == 1 && rows.dtype() == DType::int64 && rows.device().is_cpu(), who,
                ": rows must be a 1-D int64 CPU tensor, got ",
                rows.defined() ? dtype_name(rows.dtype()) + to_string(rows.shape()) : std::string("an undefined tensor"));
  const int64_t b = rows.shape()[0], n = buffer.size();
  CTRAX_REQUIRE(b >= 1, who, ": no rows");
  const Tensor* fields[6] = {&buffer.observations(), &buffer.actions(), &buffer.dist_inputs(), &advantages,
                             &value_targets, &old_values};
  const char* names[3] = {"advantages", "value targets", "old values"};
  for (int f = 3; f < 6; ++f)
    CTRAX_REQUIRE(fields[f]->defined() && fields[f]->device().is_cpu() && fields[f]->rank() >= 1 &&
                      fields[f]->shape()[0] == n,
                  who, ": the ", names[f - 3], " must be a CPU tensor of ", n, " rows (the buffer's), got ",
                  fields[f]->defined() ? to_string(fields[f]->shape()) : std::string("an undefined tensor"));
  const Tensor index = rows.contiguous();
  const int64_t* r = index.data<int64_t>();
  const auto [lo, hi] = std::minmax_element(r, r + b);
  CTRAX_REQUIRE(*lo >= 0 && *hi < n, who, ": rows must be in [0, ", n, "), got ", *lo < 0 ? *lo : *hi);
  CTRAX_REQUIRE(!normalize || advantages.dtype() == DType::float32, who,
                ": the advantages must be float32 to normalise, got ", advantages.dtype());
  // Refilled in place: a step copies its inputs (a plan binds them by value; a device batch is
  // copied from these pageable host buffers before the copy call returns), so nothing reads the
  // previous minibatch's values once its steps are done.
  for (int f = 0; f < 6; ++f) gather_rows(*fields[f], r, b, fields_[f]);
  if (normalize) {
    Tensor& a = fields_[3];
    normalize_values(a.data<float>(), a.data<float>(), static_cast<size_t>(b), normalize->first, normalize->second);
  }
  if (!(mask_.defined() && mask_.shape() == Shape{b, 1} && mask_.storage().use_count() == 1)) mask_ = ones(Shape{b, 1});
}

Tensor normalize_minibatch(const Tensor& advantages, double epsilon, double factor) {
  const std::vector<double> a = advantages.to_vector<double>();
  CTRAX_REQUIRE(!a.empty(), "normalize_minibatch: no advantages");
  std::vector<float> out(a.size());
  normalize_values(a.data(), out.data(), a.size(), epsilon, factor);
  return from_vector(out, advantages.shape());
}

}  // namespace ctrax
