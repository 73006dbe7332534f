// The optimizers on CUDA weights (kernels/cuda/optimizer_steps.h): the same updates as the CPU,
// bit for bit, and the same statistics up to the order of the sums. With gradient clipping the
// update is scaled by max_norm / ||g||, and the norm's sum runs in another order on each device,
// so the scale (and then a weight) may differ in its last bits: those cases allow a few ulps.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ctrax/optim/adafactor.h>
#include <ctrax/optim/adam.h>
#include <ctrax/optim/momentum.h>
#include <ctrax/optim/rmsprop.h>
#include <ctrax/optim/sgd.h>
#include <ctrax/tensor/tree.h>

#include "test_util.h"

namespace ctrax {
namespace {

const Device kGpu = Device::cuda(0);

Tree to_device(const Tree& t, Device d) {
  return t.map([d](const Tensor& x) { return x.to(d); });
}

// Two leaves (one large enough for many blocks, one tiny) and three steps with clipping on.
void check_same_as_cpu(const Optimizer& opt, DType dtype, const std::string& label, bool clips = false) {
  CAPTURE(label);
  CAPTURE(dtype);
  Tree cpu_w{test::random_tensor(Shape{300, 70}, dtype, 1), test::random_tensor(Shape{3}, dtype, 2)};
  Tree gpu_w = to_device(cpu_w, kGpu);
  Tree cpu_s = opt.init(cpu_w), gpu_s = opt.init(gpu_w);
  for (int64_t step = 0; step < 3; ++step) {
    const Tree g{test::random_tensor(Shape{300, 70}, dtype, 10 + step), test::random_tensor(Shape{3}, dtype, 20 + step)};
    const OptimizerStats a = opt.update(step, 0.01, g, cpu_w, cpu_s);
    const OptimizerStats b = opt.update(step, 0.01, to_device(g, kGpu), gpu_w, gpu_s);
    CHECK(b.gradients_l2 == doctest::Approx(a.gradients_l2).epsilon(1e-12));
    CHECK(b.weights_l2 == doctest::Approx(a.weights_l2).epsilon(1e-12));
    CHECK(b.clipped == a.clipped);
  }
  // Exact, or (clipping) four ulps of the value, plus four of a 0.01-sized update near zero.
  const double ulp = dtype == DType::float32 ? 0x1p-23 : 0x1p-52;
  const test::Tolerance tol = clips ? test::Tolerance{0.04 * ulp, 4 * ulp} : test::Tolerance{0.0, 0.0};
  for (size_t i = 0; i < 2; ++i) {
    const Tensor& w = gpu_w.list()[i].leaf();
    CHECK(w.device() == kGpu);
    test::check_close(w.to(Device::cpu()), cpu_w.list()[i].leaf(), tol, label + " weight");
  }
  const std::vector<Tensor> cpu_slots = cpu_s.leaves(), gpu_slots = gpu_s.leaves();
  REQUIRE(cpu_slots.size() == gpu_slots.size());
  for (size_t i = 0; i < cpu_slots.size(); ++i)
    test::check_close(gpu_slots[i].to(Device::cpu()), cpu_slots[i], tol, label + " slot");
}

TEST_CASE("cuda optimizers: SGD, Momentum, Adam, AdamW and RMSProp match the cpu bit for bit, unclipped") {
  for (DType dtype : {DType::float32, DType::float64}) {
    check_same_as_cpu(SGD(SGDOptions{0.01, 1.0}), dtype, "SGD (clipped)", true);
    check_same_as_cpu(SGD(SGDOptions{0.01, std::nullopt}), dtype, "SGD");
    check_same_as_cpu(Momentum(MomentumOptions{0.01, 0.9, 1e-5, true, 1.0}), dtype, "Momentum nesterov (clipped)",
                      true);
    check_same_as_cpu(Momentum(MomentumOptions{0.01, 0.9, 1e-5, true, std::nullopt}), dtype, "Momentum nesterov");
    check_same_as_cpu(Momentum(MomentumOptions{0.01, 0.9, 1e-5, false, std::nullopt}), dtype, "Momentum");
    check_same_as_cpu(Adam(AdamOptions{}), dtype, "Adam");
    check_same_as_cpu(AdamW(AdamWOptions{}), dtype, "AdamW");
    check_same_as_cpu(RMSProp(RMSPropOptions{}), dtype, "RMSProp");
  }
}

TEST_CASE("cuda optimizers: refusals name the devices") {
  Tree w{zeros(Shape{4}, DType::float32, kGpu)};
  SGD sgd;
  Tree s = sgd.init(w);
  test::check_error([&] { sgd.update(0, 0.1, Tree{zeros(Shape{4})}, w, s); }, {"gradient", "cpu", "cuda:0"});
  Adafactor adafactor;
  Tree w2{zeros(Shape{4, 4}, DType::float32, kGpu)};
  Tree s2 = adafactor.init(w2);
  test::check_error([&] { adafactor.update(0, 0.1, Tree{zeros(Shape{4, 4}, DType::float32, kGpu)}, w2, s2); },
                    {"Adafactor", "cuda:0", "CPU weights only"});
}

}  // namespace
}  // namespace ctrax
