// Trajectories, slices and their batches (see trajectory.h).
#include "trajectory.h"

#include <algorithm>
#include <utility>
#include <cmath>
#include <cstring>
#include <vector>

#include "../../base/error.h"

namespace ctrax {

namespace {

// The shape of one row: `shape` without its leading axis.
Shape row_shape(const Shape& shape) {
  Shape row = shape;
  row.erase(0);
  return row;
}

// `lead` followed by `rest`.
Shape prefixed(std::initializer_list<int64_t> lead, const Shape& rest) {
  const std::vector<int64_t> dims(lead);
  Shape out(dims);
  for (int64_t d : rest) out.push_back(d);
  return out;
}

// A fresh contiguous CPU copy of `t` in `dtype`.
Tensor owned_copy(const Tensor& t, DType dtype) {
  Tensor out(t.shape(), dtype);
  out.copy_(t);
  return out;
}

void require_cpu(const char* field, const Tensor& t) {
  CTRAX_REQUIRE(t.device().is_cpu(), "Trajectory: ", field, " are on ", t.device(), " (expected CPU tensors)");
}

// Bytes of one row of a contiguous tensor.
size_t row_bytes(const Tensor& t) {
  return static_cast<size_t>(row_shape(t.shape()).numel()) * t.element_size();
}

// Copies rows [first, first + count) of contiguous `src` to row `dst_row` on of contiguous
// `dst` (same row layout).
void copy_rows(const Tensor& src, int64_t first, int64_t count, const Tensor& dst, int64_t dst_row) {
  if (count <= 0) return;
  const size_t bytes = row_bytes(src);
  std::memcpy(static_cast<char*>(dst.raw_data()) + static_cast<size_t>(dst_row) * bytes,
              static_cast<const char*>(src.raw_data()) + static_cast<size_t>(first) * bytes,
              static_cast<size_t>(count) * bytes);
}

int64_t next_power_of_two(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

Trajectory::Trajectory(const TrajectoryData& data, double gamma) {
  CTRAX_REQUIRE(std::isfinite(gamma) && gamma >= 0.0 && gamma <= 1.0, "Trajectory: gamma must be in [0, 1], got ",
                gamma);
  CTRAX_REQUIRE(data.observations.defined() && data.observations.rank() >= 1 && data.observations.shape()[0] >= 2,
                "Trajectory: observations must be [T + 1, ...] with T >= 1 steps, got ",
                data.observations.defined() ? data.observations.shape() : Shape{},
                data.observations.defined() ? "" : " (undefined)");
  require_cpu("observations", data.observations);
  length_ = data.observations.shape()[0] - 1;
  const int64_t t = length_;
  CTRAX_REQUIRE(data.actions.defined() && data.actions.rank() >= 1 && data.actions.shape()[0] == t,
                "Trajectory: actions must be [T, ...] with T = ", t, " (one fewer than the observations), got ",
                data.actions.defined() ? data.actions.shape() : Shape{}, data.actions.defined() ? "" : " (undefined)");
  require_cpu("actions", data.actions);
  CTRAX_REQUIRE(data.rewards.defined() && data.rewards.shape() == Shape{t} && is_floating(data.rewards.dtype()),
                "Trajectory: rewards must be floating [T] with T = ", t, ", got ",
                data.rewards.defined() ? data.rewards.shape() : Shape{}, data.rewards.defined() ? " of dtype " : "",
                data.rewards.defined() ? dtype_name(data.rewards.dtype()) : "(undefined)");
  if (data.dist_inputs.defined()) {
    CTRAX_REQUIRE(data.dist_inputs.rank() == 2 && data.dist_inputs.shape()[0] == t &&
                      is_floating(data.dist_inputs.dtype()),
                  "Trajectory: dist_inputs must be floating [T, D] with T = ", t, ", got shape ",
                  data.dist_inputs.shape(), " and dtype ", data.dist_inputs.dtype());
    require_cpu("dist_inputs", data.dist_inputs);
    dist_inputs_ = owned_copy(data.dist_inputs, DType::float32);
  } else {
    dist_inputs_ = zeros(Shape{t, 0}, DType::float32);
  }
  if (data.discount_mask.defined()) {
    CTRAX_REQUIRE(data.discount_mask.shape() == Shape{t}, "Trajectory: discount_mask must be [T] with T = ", t,
                  ", got ", data.discount_mask.shape());
    require_cpu("discount_mask", data.discount_mask);
    discount_mask_ = owned_copy(data.discount_mask, DType::boolean);
  } else {
    discount_mask_ = ones(Shape{t}, DType::boolean);
  }
  observations_ = owned_copy(data.observations, data.observations.dtype());
  actions_ = owned_copy(data.actions, data.actions.dtype());
  terminated_ = data.terminated;
  truncated_ = data.truncated;

  // Returns in double from the rewards as given: R_t = r_t + gamma_t R_{t+1}, R_T = 0.
  const std::vector<double> r = data.rewards.to_vector<double>();
  const uint8_t* discount = discount_mask_.data<uint8_t>();
  rewards_ = Tensor(Shape{t}, DType::float32);
  returns_ = Tensor(Shape{t}, DType::float32);
  float* rewards = rewards_.data<float>();
  float* returns = returns_.data<float>();
  double ret = 0.0;
  for (int64_t i = t - 1; i >= 0; --i) {
    ret = r[static_cast<size_t>(i)] + (discount[i] ? gamma : 1.0) * ret;
    returns[i] = static_cast<float>(ret);
    rewards[i] = static_cast<float>(r[static_cast<size_t>(i)]);
  }
  total_return_ = 0.0;
  for (double x : r) total_return_ += x;
}

Trajectory Trajectory::from_parts(const TrajectoryParts& p) {
  const char* who = "Trajectory::from_parts";
  CTRAX_REQUIRE(p.observations.defined() && p.observations.rank() >= 1 && p.observations.shape()[0] >= 2, who,
                ": observations must be [T + 1, ...] with T >= 1 steps, got ",
                p.observations.defined() ? p.observations.shape() : Shape{},
                p.observations.defined() ? "" : " (undefined)");
  const int64_t t = p.observations.shape()[0] - 1;
  CTRAX_REQUIRE(p.actions.defined() && p.actions.rank() >= 1 && p.actions.shape()[0] == t, who,
                ": actions must be [T, ...] with T = ", t, ", got ", p.actions.defined() ? p.actions.shape() : Shape{},
                p.actions.defined() ? "" : " (undefined)");
  // The per-step fields: [T] (or [T, D]) in the dtype the getters promise.
  auto require_field = [&](const char* field, const Tensor& x, DType dtype, bool matrix) {
    const bool ok = x.defined() && x.dtype() == dtype &&
                    (matrix ? x.rank() == 2 && x.shape()[0] == t : x.shape() == Shape{t});
    CTRAX_REQUIRE(ok, who, ": ", field, " must be ", dtype_name(dtype), matrix ? " [T, D]" : " [T]", " with T = ", t,
                  ", got ", x.defined() ? dtype_name(x.dtype()) : "an undefined tensor", " ",
                  x.defined() ? x.shape() : Shape{});
  };
  require_field("rewards", p.rewards, DType::float32, false);
  require_field("dist_inputs", p.dist_inputs, DType::float32, true);
  require_field("discount_mask", p.discount_mask, DType::boolean, false);
  require_field("returns", p.returns, DType::float32, false);
  for (const auto& [field, x] : {std::pair<const char*, const Tensor&>{"observations", p.observations},
                                 {"actions", p.actions},
                                 {"rewards", p.rewards},
                                 {"dist_inputs", p.dist_inputs},
                                 {"discount_mask", p.discount_mask},
                                 {"returns", p.returns}})
    require_cpu(field, x);
  Trajectory out;
  out.length_ = t;
  out.observations_ = owned_copy(p.observations, p.observations.dtype());
  out.actions_ = owned_copy(p.actions, p.actions.dtype());
  out.rewards_ = owned_copy(p.rewards, DType::float32);
  out.dist_inputs_ = owned_copy(p.dist_inputs, DType::float32);
  out.discount_mask_ = owned_copy(p.discount_mask, DType::boolean);
  out.returns_ = owned_copy(p.returns, DType::float32);
  out.terminated_ = p.terminated;
  out.truncated_ = p.truncated;
  out.total_return_ = p.total_return;
  return out;
}

TrajectoryParts Trajectory::parts() const {
  return TrajectoryParts{observations_, actions_,   rewards_,    dist_inputs_, discount_mask_,
                         returns_,      terminated_, truncated_, total_return_};
}

TimeStepBatch Trajectory::to_batch(int64_t margin) const {
  CTRAX_REQUIRE(margin >= 0, "Trajectory::to_batch: margin must be >= 0, got ", margin);
  return stack_slices({TrajectorySlice{this, 0, length_ + margin, margin}});
}

int64_t n_slices(const Trajectory& trajectory, std::optional<int64_t> max_slice_length, int64_t margin) {
  CTRAX_REQUIRE(margin >= 0, "n_slices: margin must be >= 0, got ", margin);
  if (!max_slice_length) return 1;
  CTRAX_REQUIRE(*max_slice_length >= 1, "n_slices: max_slice_length must be >= 1, got ", *max_slice_length);
  // A trajectory [o0, o1, o2, o3] (T = 3) with margin 0 has entries o0..o2: 2 slices of
  // length 2 (starting at o0 and o1); with margin 1 the entry o3 adds a third.
  return std::max<int64_t>(1, trajectory.length() + 1 + margin - *max_slice_length);
}

namespace {

// The slices' shared layout: their longest and shortest lengths and their dist_inputs per step
// (0 when none has any); every slice is checked against its trajectory and against slice 0.
struct SliceLayout {
  int64_t longest = 0, shortest = -1, d = 0;
};

SliceLayout check_slices(const std::vector<TrajectorySlice>& slices) {
  const Trajectory* first = slices.front().trajectory;
  SliceLayout out;
  for (size_t b = 0; b < slices.size(); ++b) {
    const TrajectorySlice& s = slices[b];
    CTRAX_REQUIRE(s.trajectory != nullptr, "stack_slices: slice ", b, " has no trajectory");
    const Trajectory& tr = *s.trajectory;
    CTRAX_REQUIRE(s.margin >= 0 && s.start >= 0 && s.length >= 1 && s.start + s.length <= tr.length() + s.margin,
                  "stack_slices: slice ", b, " covers entries [", s.start, ", ", s.start + s.length,
                  ") with margin ", s.margin, ", outside the ", tr.length() + s.margin,
                  " entries of its trajectory (T = ", tr.length(), " steps + margin)");
    CTRAX_REQUIRE(row_shape(tr.observations().shape()) == row_shape(first->observations().shape()) &&
                      tr.observations().dtype() == first->observations().dtype(),
                  "stack_slices: slice ", b, " has observations ", tr.observations().dtype(), " ",
                  row_shape(tr.observations().shape()), ", slice 0 ", first->observations().dtype(), " ",
                  row_shape(first->observations().shape()));
    CTRAX_REQUIRE(row_shape(tr.actions().shape()) == row_shape(first->actions().shape()) &&
                      tr.actions().dtype() == first->actions().dtype(),
                  "stack_slices: slice ", b, " has actions ", tr.actions().dtype(), " ",
                  row_shape(tr.actions().shape()), ", slice 0 ", first->actions().dtype(), " ",
                  row_shape(first->actions().shape()));
    if (tr.n_dist_inputs() > 0) {
      CTRAX_REQUIRE(out.d == 0 || out.d == tr.n_dist_inputs(), "stack_slices: slice ", b, " has ",
                    tr.n_dist_inputs(), " dist_inputs per step, an earlier one ", out.d);
      out.d = tr.n_dist_inputs();
    }
    out.longest = std::max(out.longest, s.length);
    out.shortest = out.shortest < 0 ? s.length : std::min(out.shortest, s.length);
  }
  return out;
}

}  // namespace

TimeStepBatch stack_slices(const std::vector<TrajectorySlice>& slices, std::optional<int64_t> min_length,
                           bool pad_to_power_of_two) {
  CTRAX_REQUIRE(!slices.empty(), "stack_slices: no slices given");
  CTRAX_REQUIRE(!min_length || *min_length >= 1, "stack_slices: min_length must be >= 1, got ", *min_length);
  const Trajectory* first = slices.front().trajectory;
  const SliceLayout layout = check_slices(slices);
  const int64_t longest = layout.longest, shortest = layout.shortest, d = layout.d;
  int64_t length = longest;
  if (min_length) length = std::max(length, *min_length);
  // Trax pads to a power of two so that a jitted model sees few distinct shapes.
  if (pad_to_power_of_two && length != shortest) length = next_power_of_two(length);

  const auto batch = static_cast<int64_t>(slices.size());
  const Shape obs_row = row_shape(first->observations().shape());
  const Shape act_row = row_shape(first->actions().shape());
  TimeStepBatch out;
  out.observation = zeros(prefixed({batch, length}, obs_row), first->observations().dtype());
  out.action = zeros(prefixed({batch, length}, act_row), first->actions().dtype());
  out.reward = zeros(Shape{batch, length}, DType::float32);
  out.done = ones(Shape{batch, length}, DType::boolean);  // past the steps every entry is "done"
  out.mask = zeros(Shape{batch, length}, DType::float32);
  out.dist_inputs = zeros(Shape{batch, length, d}, DType::float32);
  out.discount_mask = zeros(Shape{batch, length}, DType::boolean);
  out.return_ = zeros(Shape{batch, length}, DType::float32);
  float* reward = out.reward.data<float>();
  uint8_t* done = out.done.data<uint8_t>();
  float* mask = out.mask.data<float>();
  uint8_t* discount = out.discount_mask.data<uint8_t>();
  float* ret = out.return_.data<float>();

  for (int64_t b = 0; b < batch; ++b) {
    const TrajectorySlice& s = slices[static_cast<size_t>(b)];
    const Trajectory& tr = *s.trajectory;
    const int64_t t = tr.length();
    const int64_t row = b * length;  // first entry of this example, counted in entries
    // Steps [start, step_end) are real; entry T (the final observation) follows them.
    const int64_t step_end = std::min(s.start + s.length, t);
    const int64_t n_steps = std::max<int64_t>(0, step_end - s.start);
    const int64_t obs_end = std::min(s.start + s.length, t + 1);
    copy_rows(tr.observations(), s.start, std::max<int64_t>(0, obs_end - s.start), out.observation, row);
    copy_rows(tr.actions(), s.start, n_steps, out.action, row);
    if (tr.n_dist_inputs() > 0) copy_rows(tr.dist_inputs(), s.start, n_steps, out.dist_inputs, row);
    const float* tr_reward = tr.rewards().data<float>();
    const float* tr_return = tr.returns().data<float>();
    const uint8_t* tr_discount = tr.discount_mask().data<uint8_t>();
    for (int64_t j = 0; j < n_steps; ++j) {
      const int64_t e = s.start + j;
      reward[row + j] = tr_reward[e];
      ret[row + j] = tr_return[e];
      discount[row + j] = tr_discount[e];
      mask[row + j] = 1.0f;
      done[row + j] = (e == t - 1 && tr.terminated()) ? 1 : 0;
    }
  }
  return out;
}

}  // namespace ctrax
