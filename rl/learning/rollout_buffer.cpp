// RolloutBuffer: see rollout_buffer.h.
#include "rollout_buffer.h"

#include <algorithm>
#include <cmath>

#include "../../base/error.h"
#include "../../tensor/ops.h"

namespace ctrax {

namespace {

// The value network over the [K, L + 1] grid, a few pieces at a time: the activations of a
// whole epoch's grid (4096 rows x 64 units is 1 MiB a layer) were the peak of a run's memory.
// Each piece's rows are computed as in one call (row-independent networks), so V is the same.
constexpr int64_t kValueChunkRows = 1024;

Tensor chunked_values(const Tensor& observations, const std::function<Tensor(const Tensor&)>& values) {
  const int64_t k = observations.shape()[0], columns = observations.shape()[1];
  const int64_t pieces_per_chunk = std::max<int64_t>(1, kValueChunkRows / std::max<int64_t>(1, columns));
  if (pieces_per_chunk >= k) return values(observations).to(DType::float32).contiguous();
  std::vector<Tensor> parts;
  for (int64_t start = 0; start < k; start += pieces_per_chunk)
    parts.push_back(values(observations.slice(0, start, std::min(k, start + pieces_per_chunk)).contiguous())
                        .to(DType::float32));
  return concatenate(parts, 0).contiguous();
}

}  // namespace

RolloutBuffer::RolloutBuffer(const std::vector<Trajectory>& pieces, const std::function<Tensor(const Tensor&)>& values,
                             const AdvantageEstimator& estimator, double gamma) {
  CTRAX_REQUIRE(!pieces.empty(), "RolloutBuffer: the collection holds no trajectory");
  std::vector<TrajectorySlice> slices;
  for (const Trajectory& t : pieces) slices.push_back(TrajectorySlice{&t, 0, t.length() + 1, 1});
  const TimeStepBatch b = stack_slices(slices, std::nullopt, /*pad_to_power_of_two=*/false);  // [K, L + 1]
  const Tensor observations = b.observation.to(DType::float32);
  const Tensor v = chunked_values(observations, values);  // [K, L + 1]
  CTRAX_REQUIRE(v.shape() == b.reward.shape(), "RolloutBuffer: the value function gave ", to_string(v.shape()),
                " for observations ", to_string(observations.shape()), "; expected ", to_string(b.reward.shape()));
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
  for (int64_t start = 0; start < n; start += minibatch_size)
    out.push_back(order.slice(0, start, std::min(n, start + minibatch_size)).contiguous());
  return out;
}

Tensor RolloutBuffer::select(const Tensor& field, const Tensor& rows) {
  return index_select(field, 0, rows).unsqueeze(1).contiguous();
}

Tensor normalize_minibatch(const Tensor& advantages, double epsilon, double factor) {
  const std::vector<double> a = advantages.to_vector<double>();
  CTRAX_REQUIRE(!a.empty(), "normalize_minibatch: no advantages");
  double sum = 0;
  for (double x : a) sum += x;
  const double mean = sum / static_cast<double>(a.size());
  double square = 0;
  for (double x : a) square += (x - mean) * (x - mean);
  const double std = std::sqrt(square / static_cast<double>(a.size()));
  std::vector<float> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = static_cast<float>(factor * (a[i] - mean) / (std + epsilon));
  return from_vector(out, advantages.shape());
}

}  // namespace ctrax
