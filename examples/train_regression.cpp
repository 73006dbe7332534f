// Supervised training with ctrax's Trainer: regression of a noisy 1-D function.
//
//   train_regression [OUTPUT_DIR]
//
// Fits y = sin(3x) + x / 2 + noise, noise ~ N(0, 0.05^2), x ~ U(-2, 2), with a 1-64-64-1 Tanh
// MLP, the L2 loss and Adam, then reports the mean squared error on held-out points. The noise
// alone gives an MSE of 0.0025, so an MSE near that means the function itself was learned.
//
// Exits with status 1 unless the held-out MSE is below 0.01 (a test runs it that way).
#include <cmath>
#include <cstdio>

#include <ctrax/ctrax.h>

using namespace ctrax;

namespace {

// n samples {x [n, 1], y [n, 1]} (float32).
std::pair<Tensor, Tensor> samples(Key key, int64_t n) {
  auto [x_key, noise_key] = split(key);
  const Tensor x = uniform(x_key, {n, 1}, DType::float32, -2.0, 2.0);
  const Tensor y = sin(x * 3.0) + x * 0.5 + normal(noise_key, {n, 1}, DType::float32, 0.0, 0.05);
  return {x, y};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const auto [train_x, train_y] = samples(Key(11), 2000);
    const auto [test_x, test_y] = samples(Key(12), 500);
    const Key batch_key(13);

    TrainerOptions options;
    options.model = MLP({64, 64, 1}, Tanh);
    options.loss = L2Loss();
    options.optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 3e-3, .weight_decay_rate = 0.0});
    // Minibatches of 64 drawn with replacement; batch i depends only on i.
    options.train_stream = [&](int64_t index) {
      const Tensor rows = randint(fold_in(batch_key, static_cast<uint64_t>(index)), {64}, 0, train_x.shape()[0]);
      return Batch{index_select(train_x, 0, rows), index_select(train_y, 0, rows)};
    };
    options.eval_stream = [&](int64_t) { return Batch{test_x, test_y}; };
    if (argc > 1) options.output_dir = argv[1];
    Trainer trainer(std::move(options));

    const int64_t total_steps = 4000, steps_per_epoch = 1000;
    while (trainer.step() < total_steps) {
      trainer.train_epoch(steps_per_epoch);
      std::printf("step %5lld  held-out MSE %.5f\n", static_cast<long long>(trainer.step()),
                  trainer.evaluate(1)["loss"]);
    }
    const double mse = trainer.evaluate(1)["loss"];
    std::printf("final held-out MSE %.5f (target < 0.01; the noise alone gives 0.0025)\n", mse);
    return mse < 0.01 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_regression: %s\n", e.what());
    return 2;
  }
}
