// MountainCarContinuous (see mountain_car_continuous.h).
#include "mountain_car_continuous.h"

#include <cmath>

#include "../../../base/error.h"

namespace ctrax {

namespace {

// A NumPy 2 scalar as Gymnasium's step sees it: a Python float (weak: it takes the other
// operand's type), a numpy float32 or a numpy float64. NEP 50: float32 with a Python float or
// float32 computes in float32; anything with float64 computes in float64. Computing in double
// and rounding once to float32 gives exactly float32 arithmetic for + - * (53 >= 2 * 24 + 2).
enum class Np { py, f32, f64 };

struct Num {
  double v;
  Np t;
};

Np result_type(Np a, Np b) {
  if (a == Np::f64 || b == Np::f64) return Np::f64;
  if (a == Np::f32 || b == Np::f32) return Np::f32;
  return Np::py;
}

double as(double v, Np t) { return t == Np::f32 ? static_cast<double>(static_cast<float>(v)) : v; }

Num add(Num a, Num b) {
  const Np t = result_type(a.t, b.t);
  return {as(as(a.v, t) + as(b.v, t), t), t};
}
Num sub(Num a, Num b) {
  const Np t = result_type(a.t, b.t);
  return {as(as(a.v, t) - as(b.v, t), t), t};
}
Num mul(Num a, Num b) {
  const Np t = result_type(a.t, b.t);
  return {as(as(a.v, t) * as(b.v, t), t), t};
}
// a < b, compared in the promoted type (so float32 0.44999999 >= Python 0.45 is true).
bool less(Num a, Num b) {
  const Np t = result_type(a.t, b.t);
  return as(a.v, t) < as(b.v, t);
}
bool equal(Num a, Num b) {
  const Np t = result_type(a.t, b.t);
  return as(a.v, t) == as(b.v, t);
}
Num py(double v) { return {v, Np::py}; }

}  // namespace

MountainCarContinuousStepOutcome mountain_car_continuous_step(const MountainCarContinuousParams& p,
                                                              std::array<double, 2>& state, bool& float32_state,
                                                              float action) {
  const Np state_type = float32_state ? Np::f32 : Np::f64;
  Num position{state[0], state_type}, velocity{state[1], state_type};
  const Num a{action, Np::f32};
  // Python's max(a, -1.0) and min(., 1.0): an action in range keeps its float32 type, a
  // clipped one becomes the Python float bound.
  Num force = a;
  if (less(force, py(p.min_action))) force = py(p.min_action);
  if (less(py(p.max_action), force)) force = py(p.max_action);
  // math.cos takes the value as a Python float whatever its numpy type.
  const Num gravity_term = mul(py(0.0025), py(std::cos(mul(py(3), position).v)));
  velocity = add(velocity, sub(mul(force, py(p.power)), gravity_term));
  if (less(py(p.max_speed), velocity)) velocity = py(p.max_speed);
  if (less(velocity, py(-p.max_speed))) velocity = py(-p.max_speed);
  position = add(position, velocity);
  if (less(py(p.max_position), position)) position = py(p.max_position);
  if (less(position, py(p.min_position))) position = py(p.min_position);
  if (equal(position, py(p.min_position)) && less(velocity, py(0))) velocity = py(0);
  const bool terminated = !less(position, py(p.goal_position)) && !less(velocity, py(p.goal_velocity));
  double reward = terminated ? 100.0 : 0.0;
  reward -= std::pow(static_cast<double>(action), 2) * 0.1;
  // Gymnasium: self.state = np.array([position, velocity], dtype=np.float32).
  state = {static_cast<float>(position.v), static_cast<float>(velocity.v)};
  float32_state = true;
  return {reward, terminated};
}

MountainCarContinuousEnv::MountainCarContinuousEnv(MountainCarContinuousParams params)
    : ClassicControlEnv("MountainCarContinuous-v0",
                        float32_box({params.min_position, -params.max_speed}, {params.max_position, params.max_speed}),
                        Space::box(Shape{1}, params.min_action, params.max_action, DType::float32), 2),
      params_(params) {}

void MountainCarContinuousEnv::reset_state(Key key) {
  state_ = {uniform(key, Shape{}, DType::float64, -0.6, -0.4).item<double>(), 0.0};
  float32_state_ = false;
}

void MountainCarContinuousEnv::assign_state(const std::vector<double>& state) {
  state_ = {state[0], state[1]};
  float32_state_ = false;
}

std::vector<double> MountainCarContinuousEnv::checkpoint_values() const {
  return {state_[0], state_[1], float32_state_ ? 1.0 : 0.0};
}

void MountainCarContinuousEnv::restore_checkpoint_values(const std::vector<double>& values) {
  CTRAX_REQUIRE(values.size() == 3 && (values[2] == 0.0 || values[2] == 1.0), name(),
                ": restore_checkpoint_state: the float32-state flag is ", values.size() == 3 ? values[2] : -1.0,
                " (expected 0 or 1)");
  // A float32 state must hold float32 values, or the next step's roundings would not be NumPy's.
  const bool f32 = values[2] == 1.0;
  // (Beyond float32's range the cast would be undefined behaviour: such a value is no float32.)
  auto is_float32 = [](double v) {
    return std::abs(v) <= 3.4028234663852886e38 && static_cast<double>(static_cast<float>(v)) == v;
  };
  CTRAX_REQUIRE(!f32 || (is_float32(values[0]) && is_float32(values[1])),
                name(), ": restore_checkpoint_state: the state (", values[0], ", ", values[1],
                ") is flagged float32 but does not hold float32 values");
  state_ = {values[0], values[1]};
  float32_state_ = f32;
}

Tensor MountainCarContinuousEnv::observation() const { return float32_observation({state_[0], state_[1]}); }

StepResult MountainCarContinuousEnv::step_state(const Tensor& action) {
  const MountainCarContinuousStepOutcome outcome =
      mountain_car_continuous_step(params_, state_, float32_state_, box_action(action));
  return {observation(), outcome.reward, outcome.terminated, false};
}

}  // namespace ctrax
