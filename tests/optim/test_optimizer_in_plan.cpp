// Optimizer::update_from_tensors: the update as a kernel that compiled plans replay with each
// call's step and learning rate, against the host update() bit for bit; its checks; and the
// Trainer's fallback for an optimizer that does not run in plans.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include <ctrax/ctrax.h>

#include "../test_util.h"

using namespace ctrax;

namespace {

// [{bias: [5], kernel: [3, 5]}, scale: [4]]: a nested tree, as the layers give.
Tree weights_of(DType dtype, uint64_t seed) {
  Tree::Dict layer;
  layer["bias"] = Tree(test::random_tensor(Shape{5}, dtype, seed));
  layer["kernel"] = Tree(test::random_tensor(Shape{3, 5}, dtype, seed + 1));
  return Tree(Tree::List{Tree(std::move(layer)), Tree(test::random_tensor(Shape{4}, dtype, seed + 2))});
}

bool same_bits(const Tree& a, const Tree& b) {
  const std::vector<Tensor> la = a.leaves(), lb = b.leaves();
  if (la.size() != lb.size()) return false;
  for (size_t i = 0; i < la.size(); ++i)
    if (!test::bitwise_equal(la[i], lb[i])) return false;
  return true;
}

std::vector<std::shared_ptr<Optimizer>> every_optimizer() {
  AdafactorOptions factored;
  factored.do_momentum = true;
  factored.beta1 = 0.9;
  return {std::make_shared<SGD>(SGDOptions{.learning_rate = 0.1}),
          std::make_shared<Momentum>(MomentumOptions{.learning_rate = 0.1, .nesterov = true}),
          std::make_shared<Adam>(AdamOptions{.learning_rate = 0.1, .clip_grad_norm = 2.0}),
          std::make_shared<AdamW>(AdamWOptions{.learning_rate = 0.1}),
          std::make_shared<RMSProp>(RMSPropOptions{.learning_rate = 0.1}),
          std::make_shared<Adafactor>(factored)};
}

}  // namespace

TEST_CASE("update_from_tensors replayed in a plan equals update() bit for bit, with each step's rate") {
  for (const auto& opt : every_optimizer()) {
    for (DType dtype : {DType::float32, DType::float64}) {
      INFO(opt->name(), " ", dtype_name(dtype));
      REQUIRE(opt->runs_in_plans());
      Tree host_w = weights_of(dtype, 1), plan_w = weights_of(dtype, 1);
      Tree host_s = opt->init(host_w), plan_s = opt->init(plan_w);
      const Tree structure = host_w;
      CompiledFunction step([&](const std::vector<Tensor>& in) {
        const Tree grads = structure.with_leaves(std::span<const Tensor>(in).first(in.size() - 2));
        return std::vector<Tensor>{opt->update_from_tensors(in[in.size() - 2], in.back(), grads, plan_w, plan_s)};
      });
      const Tensor step_input = zeros({}, DType::int64), rate_input = zeros({}, DType::float64);
      for (int t = 0; t < 6; ++t) {
        const double rate = 0.1 / (1.0 + t);
        std::vector<Tensor> grads;
        for (const Tensor& w : host_w.leaves()) grads.push_back(test::random_tensor(w.shape(), dtype, 100 + t));
        const OptimizerStats host = opt->update(t, rate, structure.with_leaves(grads), host_w, host_s);
        step_input.data<int64_t>()[0] = t;
        rate_input.data<double>()[0] = rate;
        std::vector<Tensor> inputs = grads;
        inputs.push_back(step_input);
        inputs.push_back(rate_input);
        const std::vector<double> stats = step(inputs)[0].to_vector<double>();
        CHECK(stats[0] == host.gradients_l2);
        CHECK(stats[1] == host.weights_l2);
        CHECK(stats[2] == (host.clipped ? 1.0 : 0.0));
        CHECK(same_bits(host_w, plan_w));
        CHECK(same_bits(host_s, plan_s));
      }
      CHECK(step.stats().recordings == 1);
      CHECK(step.stats().replays == 5);
    }
  }
}

// with_stats = false: the same weights and slots bit for bit, the norms not computed (NaN),
// except the gradients' norm where clipping needs it (Adam here clips at 2); in a plan too.
TEST_CASE("update() and update_from_tensors without statistics update the same bits and leave the norms NaN") {
  for (const auto& opt : every_optimizer()) {
    for (DType dtype : {DType::float32, DType::float64}) {
      INFO(opt->name(), " ", dtype_name(dtype));
      Tree ref_w = weights_of(dtype, 1), host_w = weights_of(dtype, 1), plan_w = weights_of(dtype, 1);
      Tree ref_s = opt->init(ref_w), host_s = opt->init(host_w), plan_s = opt->init(plan_w);
      const Tree structure = ref_w;
      CompiledFunction step([&](const std::vector<Tensor>& in) {
        const Tree grads = structure.with_leaves(std::span<const Tensor>(in).first(in.size() - 2));
        return std::vector<Tensor>{
            opt->update_from_tensors(in[in.size() - 2], in.back(), grads, plan_w, plan_s, /*with_stats=*/false)};
      });
      const Tensor step_input = zeros({}, DType::int64), rate_input = zeros({}, DType::float64);
      const bool clips = opt->clip_grad_norm().has_value();
      bool clipped_once = false;
      for (int t = 0; t < 4; ++t) {
        std::vector<Tensor> grads;
        for (const Tensor& w : ref_w.leaves())
          grads.push_back(mul(test::random_tensor(w.shape(), dtype, 200 + t), 1.0 + t));  // the norm grows past 2
        const Tree g = structure.with_leaves(grads);
        const OptimizerStats ref = opt->update(t, 0.05, g, ref_w, ref_s);
        const OptimizerStats host = opt->update(t, 0.05, g, host_w, host_s, /*with_stats=*/false);
        step_input.data<int64_t>()[0] = t;
        rate_input.data<double>()[0] = 0.05;
        std::vector<Tensor> inputs = grads;
        inputs.push_back(step_input);
        inputs.push_back(rate_input);
        const std::vector<double> planned = step(inputs)[0].to_vector<double>();
        CHECK(same_bits(ref_w, host_w));
        CHECK(same_bits(ref_s, host_s));
        CHECK(same_bits(ref_w, plan_w));
        CHECK(same_bits(ref_s, plan_s));
        CHECK(std::isnan(host.weights_l2));
        CHECK(std::isnan(planned[1]));
        if (clips) {  // clipping needs the norm, so it is there
          CHECK(host.gradients_l2 == ref.gradients_l2);
          CHECK(planned[0] == ref.gradients_l2);
        } else {
          CHECK(std::isnan(host.gradients_l2));
          CHECK(std::isnan(planned[0]));
        }
        CHECK(host.clipped == ref.clipped);
        CHECK(planned[2] == (ref.clipped ? 1.0 : 0.0));
        clipped_once = clipped_once || ref.clipped;
      }
      CHECK(clipped_once == clips);
    }
  }
}

TEST_CASE("update_from_tensors checks its inputs now and the step and rate on every replay") {
  Adam adam;
  Tree w = weights_of(DType::float32, 3), s = adam.init(w);
  const Tree g = w.map([](const Tensor& t) { return zeros_like(t); });
  const Tensor step = zeros({}, DType::int64), rate = full({}, 0.1, DType::float64);
  CHECK_THROWS_WITH_AS(adam.update_from_tensors(zeros({}, DType::float32), rate, g, w, s),
                       doctest::Contains("step must be a one-element int64 CPU tensor, got a tensor float32[]"), Error);
  CHECK_THROWS_WITH_AS(adam.update_from_tensors(step, zeros({2}, DType::float64), g, w, s),
                       doctest::Contains("learning_rate must be a one-element float64 CPU tensor"), Error);
  Tree short_grads(Tree::List{g[0]});
  CHECK_THROWS_WITH_AS(adam.update_from_tensors(step, rate, short_grads, w, s),
                       doctest::Contains("the gradients do not match the weights"), Error);

  CompiledFunction f([&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{adam.update_from_tensors(in[0], in[1], g, w, s)};
  });
  f({step, rate});
  f({step, rate});
  const Tensor negative = full({}, -1.0, DType::float64);
  CHECK_THROWS_WITH_AS(f({step, negative}), doctest::Contains("learning_rate must be >= 0 and finite, got -1"), Error);
  CHECK_THROWS_WITH_AS(f({full({}, -3.0, DType::int64), rate}), doctest::Contains("step must be >= 0"), Error);
  f({step, rate});  // the plan still runs after a replay threw
  CHECK(f.stats().recordings == 1);
  CHECK(f.stats().replays == 2);
}

namespace {

// SGD written as a user would write an optimizer, without saying runs_in_plans(): the Trainer
// must then update eagerly after its compiled step, with the same result as the built-in SGD.
class UserSgd final : public Optimizer {
 public:
  explicit UserSgd(double learning_rate) : Optimizer(learning_rate, std::nullopt) {}
  const char* name() const override { return "SGD"; }

 protected:
  std::vector<Tensor> init_slots(const Tensor&) const override { return {}; }
  double update_weight(int64_t, double learning_rate, double grad_scale, const Tensor& gradient, Tensor& weight,
                       std::vector<Tensor>&, bool) const override {
    const float lr = static_cast<float>(learning_rate), gs = static_cast<float>(grad_scale);
    const float* g = gradient.data<float>();
    float* w = weight.data<float>();
    double sum = 0;
    for (int64_t i = 0; i < weight.numel(); ++i) {
      sum += static_cast<double>(w[i]) * static_cast<double>(w[i]);
      w[i] = w[i] - lr * (gs * g[i]);
    }
    return sum;
  }
};

}  // namespace

TEST_CASE("Trainer with an optimizer that does not run in plans updates after the plan, with the same weights") {
  const Tensor x = normal(Key(1), {16, 3}), y = normal(Key(2), {16, 1});
  auto run = [&](std::shared_ptr<Optimizer> opt) {
    TrainerOptions o;
    o.model = Serial({Dense(8), Tanh(), Dense(1)});
    o.loss = L2Loss();
    o.optimizer = std::move(opt);
    o.train_stream = [x, y](int64_t) { return Batch{x, y}; };
    Trainer trainer(o);
    for (int i = 0; i < 5; ++i) trainer.train_step();
    CHECK(trainer.compile_stats().replays == 4);
    return trainer.weights();
  };
  const Tree user = run(std::make_shared<UserSgd>(0.05));
  const Tree builtin = run(std::make_shared<SGD>(SGDOptions{.learning_rate = 0.05}));
  CHECK_FALSE(UserSgd(0.05).runs_in_plans());
  CHECK(same_bits(user, builtin));
}
