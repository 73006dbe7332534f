// The supervised Trainer: validation, convergence, masking, evaluation, metrics files,
// checkpoints and bit-exact resumption in a new process.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <ctrax/ctrax.h>

using namespace ctrax;
namespace fs = std::filesystem;

namespace {

// A fresh, empty directory under the system's temporary directory.
fs::path fresh_directory(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ctrax_test_trainer_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// y = x W* + b* + noise for x [n, 3]: a stream of batches that depends only on the index.
BatchStream linear_stream(int64_t batch_size) {
  const Tensor w_true = from_vector(std::vector<float>{2.0f, -1.0f, 0.5f}, {3, 1});
  return [w_true, batch_size](int64_t index) {
    const Key key = fold_in(Key(42), static_cast<uint64_t>(index));
    auto [xk, nk] = split(key);
    const Tensor x = normal(xk, {batch_size, 3});
    const Tensor y = matmul(x, w_true) + 0.25 + normal(nk, {batch_size, 1}, DType::float32, 0.0, 0.01);
    return Batch{x, y};
  };
}

// Classification batches (x [n, 4], labels [n] in {0, 1, 2}, label = argmax of 3 fixed
// projections), index-determined.
BatchStream class_stream(int64_t batch_size, uint64_t seed = 7) {
  return [batch_size, seed](int64_t index) {
    const Tensor x = normal(fold_in(Key(seed), static_cast<uint64_t>(index)), {batch_size, 4});
    const Tensor proj = from_vector(std::vector<float>{1, 0, -1, 0, 1, 1, 1, -1, 0, 0, 0, 1}, {4, 3});
    return Batch{x, argmax(matmul(x, proj), 1)};
  };
}

TrainerOptions classifier_options(BatchStream stream) {
  TrainerOptions o;
  o.model = Serial({Dense(16), BatchNorm(), Relu(), Dropout(0.2), Dense(3)});
  o.loss = WeightedCategoryCrossEntropy();
  o.metrics = {{"accuracy", Accuracy(true)}};
  o.optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-2});
  o.train_stream = std::move(stream);
  o.seed = 5;
  return o;
}

bool bitwise_equal(const Tree& a, const Tree& b) {
  const std::vector<Tensor> x = a.leaves(), y = b.leaves();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].shape() != y[i].shape() || x[i].dtype() != y[i].dtype()) return false;
    const Tensor u = x[i].contiguous(), v = y[i].contiguous();
    if (std::memcmp(u.raw_data(), v.raw_data(), static_cast<size_t>(u.numel()) * dtype_size(u.dtype())) != 0)
      return false;
  }
  return true;
}

std::vector<std::string> read_lines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("Trainer rejects missing or inconsistent options with clear errors") {
  TrainerOptions o = classifier_options(class_stream(8));
  SUBCASE("no model") {
    o.model = nullptr;
    CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("options.model is required"), Error);
  }
  SUBCASE("no loss") {
    o.loss = nullptr;
    CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("options.loss is required"), Error);
  }
  SUBCASE("no stream") {
    o.train_stream = nullptr;
    CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("train_stream is required"), Error);
  }
  SUBCASE("loss of the wrong arity") {
    o.loss = Dense(1);
    CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("takes 1 inputs"), Error);
  }
  SUBCASE("weights given to an unweighted loss") {
    o.loss = CategoryCrossEntropy();
    o.has_weights = true;
    CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("takes no weights, but has_weights is set"), Error);
  }
  SUBCASE("id_to_mask with an unweighted metric") {
    o.metrics = {{"accuracy", Accuracy(false)}};
    o.id_to_mask = 0;
    CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("id_to_mask is set"), Error);
  }
  SUBCASE("a metric called loss") {
    o.metrics = {{"loss", Accuracy(true)}};
    CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("must not name a metric \"loss\""), Error);
  }
  SUBCASE("batch of the wrong size") {
    o.has_weights = true;
    CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("batch 0 of the train stream has 2 tensors, expected 3"),
                         Error);
  }
  SUBCASE("bad counts") {
    o.checkpoints_to_keep = 0;
    CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("checkpoints_to_keep must be >= 1, got 0"), Error);
    o.checkpoints_to_keep = 1;
    o.log_every_steps = 0;
    CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("log_every_steps must be >= 1, got 0"), Error);
  }
  SUBCASE("a schedule that goes negative") {
    o.optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = [](int64_t step) { return step < 1 ? 1e-3 : -1.0; }});
    Trainer t(o);
    t.train_step();
    CHECK_THROWS_WITH_AS(t.train_step(), doctest::Contains("schedule gave -1 at step 1"), Error);
  }
  SUBCASE("a loss layer with weights") {
    o.model = Dense(3);
    o.loss = Serial({Parallel({Dense(3), Select({0})}), WeightedCategoryCrossEntropy()});
    CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("has weights; losses and metrics must be weightless"), Error);
  }
}

TEST_CASE("Trainer fits a linear model with SGD") {
  TrainerOptions o;
  o.model = Dense(1);
  o.loss = L2Loss();
  o.optimizer = std::make_shared<SGD>(SGDOptions{.learning_rate = 0.1});
  o.train_stream = linear_stream(32);
  Trainer t(o);
  const double first = t.train_step()["loss"];
  Metrics last;
  for (int i = 0; i < 200; ++i) last = t.train_step();
  CHECK(t.step() == 201);
  CHECK(last["loss"] < 1e-3);
  CHECK(last["loss"] < first / 100);
  const std::vector<float> kernel = t.weights()["kernel"].leaf().to_vector<float>();
  CHECK(kernel[0] == doctest::Approx(2.0).epsilon(0.02));
  CHECK(kernel[1] == doctest::Approx(-1.0).epsilon(0.02));
  CHECK(kernel[2] == doctest::Approx(0.5).epsilon(0.02));
  CHECK(t.weights()["bias"].leaf().item<double>() == doctest::Approx(0.25).epsilon(0.05));
  // The model's own weights are the trained ones (updates happen in place).
  const Tensor x = from_vector(std::vector<float>{1, 1, 1}, {1, 3});
  CHECK((*t.model_ptr())(x).item<double>() == doctest::Approx(1.75).epsilon(0.02));
}

TEST_CASE("Trainer uses the optimizer's learning rate: a value at every step, or its schedule") {
  // The trap this replaces: a Trainer given Adam(1e-2) and no schedule used Trax's warm-up
  // (0, 1.25e-05, 2.5e-05, ...). The optimizer is now the one place a rate is set.
  TrainerOptions o = classifier_options(class_stream(16));
  o.optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-2});
  Trainer t(o);
  for (int i = 0; i < 3; ++i) CHECK(t.train_step().at("learning_rate") == 1e-2);
  // No optimizer: Trax's Trainer default, Adam with the multifactor schedule (0 at step 0).
  o.optimizer = nullptr;
  Trainer trax_default(o);
  CHECK(trax_default.optimizer().name() == std::string("Adam"));
  CHECK_FALSE(trax_default.optimizer().learning_rate().is_constant());
  CHECK(trax_default.train_step().at("learning_rate") == 0.0);
  CHECK(trax_default.train_step().at("learning_rate") == multifactor_schedule()(1));
}

TEST_CASE("Trainer reports the learning rate and the optimizer norms per step") {
  TrainerOptions o = classifier_options(class_stream(16));
  auto sink = std::make_shared<MemoryMetricsSink>();
  o.sinks = {sink};
  o.optimizer = std::make_shared<Adam>(AdamOptions{
      .learning_rate = multifactor_schedule({.factors = "constant * linear_warmup", .constant = 0.01, .warmup_steps = 4})});
  o.log_every_steps = 2;
  Trainer t(o);
  for (int i = 0; i < 5; ++i) t.train_step();
  REQUIRE(sink->rows().size() == 3);  // steps 1, 3 and 5 (every other step, the first included)
  CHECK(sink->rows()[0].step == 1);
  CHECK(sink->rows()[0].phase == "train");
  CHECK(sink->rows()[0].metrics.at("learning_rate") == 0.0);  // warm-up starts at 0 (Trax)
  CHECK(sink->rows()[1].metrics.at("learning_rate") == doctest::Approx(0.005));
  CHECK(sink->rows()[2].metrics.at("learning_rate") == doctest::Approx(0.01));
  for (const auto& row : sink->rows()) {
    CHECK(row.metrics.at("gradients_l2") > 0);
    CHECK(row.metrics.at("weights_l2") > 0);
    CHECK(row.metrics.count("accuracy") == 1);
  }
}

TEST_CASE("Trainer computes the optimizer's norms only for rows that are read, and trains the same bits either way") {
  for (const bool compile : {true, false}) {
    INFO("compile " << compile);
    TrainerOptions o = classifier_options(class_stream(16));
    o.compile = compile;
    o.optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 0.01});
    Trainer logged(o), quiet(o);
    for (int i = 0; i < 4; ++i) {
      const Metrics a = logged.train_step(true), b = quiet.train_step(false);
      CHECK(a.at("gradients_l2") > 0);
      CHECK(a.at("weights_l2") > 0);
      CHECK(b.count("gradients_l2") == 0);
      CHECK(b.count("weights_l2") == 0);
      CHECK(b.at("loss") == a.at("loss"));
      CHECK(b.at("learning_rate") == a.at("learning_rate"));
    }
    CHECK(bitwise_equal(logged.weights(), quiet.weights()));
    CHECK(bitwise_equal(logged.slots(), quiet.slots()));
  }
}

TEST_CASE("Trainer masks targets equal to id_to_mask and multiplies given weights") {
  // Batch: inputs, targets with some zeros (padding), weights.
  const Tensor x = normal(Key(3), {6, 4});
  const Tensor targets = from_vector(std::vector<int64_t>{0, 1, 2, 0, 2, 1}, {6});
  const Tensor weights = from_vector(std::vector<float>{1, 2, 1, 1, 0.5f, 1}, {6});
  TrainerOptions o;
  o.model = Dense(3);
  o.loss = WeightedCategoryCrossEntropy();
  o.optimizer = std::make_shared<SGD>();
  o.train_stream = [&](int64_t) { return Batch{x, targets, weights}; };
  o.has_weights = true;
  o.id_to_mask = 0;
  Trainer t(o);
  // The expected loss from the model's outputs before the step, with weights * (targets != 0).
  const Tensor logits = t.predict({x})[0];
  const Tensor masked = weights * from_vector(std::vector<float>{0, 1, 1, 0, 1, 1}, {6});
  const double expected = (*WeightedCategoryCrossEntropy())({logits, targets, masked})[0].item<double>();
  CHECK(t.train_step()["loss"] == doctest::Approx(expected).epsilon(1e-6));
}

TEST_CASE("Trainer predict (compiled) follows the weights and state as training changes them, and its results stay the caller's") {
  TrainerOptions o = classifier_options(class_stream(16));
  // The classifier has a BatchNorm: its running statistics (state) change with every step too.
  Trainer t(o);
  const Tensor x = normal(Key(5), {5, 4});
  auto eager = [&] { return t.model().apply({x}, t.weights(), t.state(), Key(), Mode::eval).outputs[0]; };
  auto same = [](const Tensor& a, const Tensor& b) { return a.to_vector<double>() == b.to_vector<double>(); };
  const Tensor first = t.predict({x})[0];   // records a plan
  const Tensor second = t.predict({x})[0];  // replays it
  CHECK_MESSAGE(same(first, eager()), "recorded call");
  CHECK_MESSAGE(same(second, eager()), "replayed call");
  const std::vector<double> before = first.to_vector<double>();
  for (int i = 0; i < 3; ++i) t.train_step();  // updates the weights in place, replaces the state
  const Tensor after = t.predict({x})[0];
  CHECK_MESSAGE(same(after, eager()), "after training");
  CHECK(after.to_vector<double>() != before);
  CHECK(first.to_vector<double>() == before);  // not overwritten by later calls
  t.set_weights(t.weights());                  // replaced weights: a new plan reads them
  CHECK_MESSAGE(same(t.predict({x})[0], eager()), "after set_weights");
  const Tensor other = normal(Key(6), {7, 4});  // another signature
  const Tensor other_eager = t.model().apply({other}, t.weights(), t.state(), Key(), Mode::eval).outputs[0];
  CHECK_MESSAGE(same(t.predict({other})[0], other_eager), "another batch size");
}

TEST_CASE("Trainer evaluate averages the loss and metrics over the eval batches") {
  TrainerOptions o = classifier_options(class_stream(16));
  const BatchStream eval = class_stream(10, 99);
  o.eval_stream = eval;
  o.model = Dense(3);
  Trainer t(o);
  const Metrics m = t.evaluate(3);
  double loss = 0, accuracy = 0;
  for (int i = 0; i < 3; ++i) {
    const Batch b = eval(i);
    const Tensor logits = t.predict({b[0]})[0];
    const Tensor w = ones(b[1].shape());
    loss += (*WeightedCategoryCrossEntropy())({logits, b[1], w})[0].item<double>() / 3;
    accuracy += (*Accuracy(true))({logits, b[1], w})[0].item<double>() / 3;
  }
  CHECK(m.at("loss") == doctest::Approx(loss).epsilon(1e-9));
  CHECK(m.at("accuracy") == doctest::Approx(accuracy).epsilon(1e-9));
  CHECK_THROWS_WITH_AS(t.evaluate(0), doctest::Contains("n_steps must be >= 1, got 0"), Error);
}

TEST_CASE("Trainer resumes bit-exactly in a new process") {
  const fs::path dir = fresh_directory("resume");
  constexpr int64_t kFirst = 7, kSecond = 6;

  // The uninterrupted run: kFirst + kSecond steps, nothing written.
  Trainer reference(classifier_options(class_stream(16)));
  for (int64_t i = 0; i < kFirst + kSecond; ++i) reference.train_step();

  // A child process trains kFirst steps and saves a checkpoint, then exits.
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int status = 0;
    try {
      TrainerOptions o = classifier_options(class_stream(16));
      o.output_dir = dir;
      Trainer t(o);
      t.train_epoch(kFirst);
    } catch (...) {
      status = 1;
    }
    _exit(status);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  // This process restores it and trains the rest.
  TrainerOptions o = classifier_options(class_stream(16));
  o.output_dir = dir;
  Trainer resumed(o);
  CHECK(resumed.step() == kFirst);
  for (int64_t i = 0; i < kSecond; ++i) resumed.train_step();
  CHECK(resumed.step() == reference.step());
  CHECK(bitwise_equal(resumed.weights(), reference.weights()));
  CHECK(bitwise_equal(resumed.state(), reference.state()));  // BatchNorm statistics
  CHECK(bitwise_equal(resumed.slots(), reference.slots()));  // Adam's moments
  CHECK(resumed.rng() == reference.rng());
  fs::remove_all(dir);
}

TEST_CASE("Trainer writes metrics files and drops the rows after the restored step") {
  const fs::path dir = fresh_directory("metrics");
  TrainerOptions o = classifier_options(class_stream(8));
  o.output_dir = dir;
  o.eval_steps_per_epoch = 1;
  {
    Trainer t(o);
    t.train_epoch(3);  // rows: train 1, 2, 3, eval 3; checkpoint 3
    t.train_step();    // row: train 4 (no checkpoint)
  }
  std::vector<std::string> csv = read_lines(dir / "metrics.csv");
  REQUIRE(csv.size() == 6);
  CHECK(csv[0] == "step,phase,loss,accuracy,learning_rate,gradients_l2,weights_l2");
  CHECK(csv[4].rfind("3,eval,", 0) == 0);
  CHECK(csv[5].rfind("4,train,", 0) == 0);
  CHECK(read_lines(dir / "metrics.jsonl").size() == 5);
  {
    Trainer t(o);  // restores step 3: the row of step 4 goes
    CHECK(t.step() == 3);
    CHECK(read_lines(dir / "metrics.csv").size() == 5);
    CHECK(read_lines(dir / "metrics.jsonl").size() == 4);
    t.train_step();
  }
  csv = read_lines(dir / "metrics.csv");
  REQUIRE(csv.size() == 6);
  CHECK(csv[5].rfind("4,train,", 0) == 0);
  fs::remove_all(dir);
}

TEST_CASE("Trainer keeps the last k checkpoints") {
  const fs::path dir = fresh_directory("keep");
  TrainerOptions o = classifier_options(class_stream(8));
  o.output_dir = dir;
  o.checkpoints_to_keep = 2;
  Trainer t(o);
  for (int i = 0; i < 4; ++i) t.train_epoch(2);
  CHECK(io::CheckpointDirectory(dir / "checkpoints").steps() == std::vector<int64_t>{6, 8});
  fs::remove_all(dir);
}

TEST_CASE("Trainer refuses a checkpoint of another model or optimizer and stays usable") {
  const fs::path dir = fresh_directory("mismatch");
  {
    TrainerOptions o = classifier_options(class_stream(8));
    o.output_dir = dir;
    Trainer(o).train_epoch(2);
  }
  SUBCASE("wider layer") {
    TrainerOptions o = classifier_options(class_stream(8));
    o.model = Serial({Dense(32), BatchNorm(), Relu(), Dropout(0.2), Dense(3)});
    o.output_dir = dir;
    CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("tensor weights/0/bias is float32[16], the model's weights "
                                                       "expects float32[32]"),
                         Error);
  }
  SUBCASE("another optimizer") {
    TrainerOptions o = classifier_options(class_stream(8));
    o.optimizer = std::make_shared<SGD>();
    o.output_dir = dir;
    CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("holds the slots of optimizer Adam, this trainer uses SGD"),
                         Error);
  }
  SUBCASE("a model with an extra layer") {
    TrainerOptions o = classifier_options(class_stream(8));
    o.model = Serial({Dense(16), BatchNorm(), Relu(), Dropout(0.2), Dense(3), Dense(3)});
    o.output_dir = dir;
    CHECK_THROWS_WITH_AS(Trainer{o}, doctest::Contains("has no tensor weights/5/bias"), Error);
  }
  SUBCASE("restore off") {
    TrainerOptions o = classifier_options(class_stream(8));
    o.output_dir = dir;
    o.restore = false;
    CHECK(Trainer(o).step() == 0);
  }
  fs::remove_all(dir);
}

TEST_CASE("Trainer with n_loss_inputs passes the rest of the batch to the loss and metrics as it is") {
  // The loss sees (prediction, target, scale): mean(scale * (prediction - target)^2); a metric
  // sees the same three. The scale column doubles the loss: the batch reaches the loss as given.
  auto scaled_l2 = [](const Tensor& y, const Tensor& t, const Tensor& scale) { return mean(scale * square(y - t)); };
  TrainerOptions o;
  o.model = Dense(1);
  o.loss = Fn("ScaledL2", scaled_l2);
  o.metrics = {{"scale_mean", Fn("ScaleMean", [](const Tensor&, const Tensor&, const Tensor& s) { return mean(s); })}};
  o.optimizer = std::make_shared<SGD>(SGDOptions{.learning_rate = 0.05});
  o.n_loss_inputs = 2;
  const BatchStream linear = linear_stream(32);
  o.train_stream = [linear](int64_t i) {
    Batch b = linear(i);
    b.push_back(full(b[1].shape(), 2.0));
    return b;
  };
  Trainer t(o);
  const Metrics first = t.evaluate(1);
  CHECK(first.at("scale_mean") == doctest::Approx(2.0));
  const Batch b0 = o.train_stream(0);
  const double expected = 2.0 * mean(square(t.predict({b0[0]})[0] - b0[1])).item<double>();
  CHECK(first.at("loss") == doctest::Approx(expected).epsilon(1e-6));
  Metrics last;
  for (int i = 0; i < 300; ++i) last = t.train_step();
  CHECK(last.at("loss") < 2e-3);

  // A batch of the wrong size, a loss of the wrong arity, and weights options are refused.
  CHECK_THROWS_WITH_AS(t.train_step(Batch{b0[0], b0[1]}), doctest::Contains("expected 3 (1 model input(s), 2 loss input(s))"),
                       ctrax::Error);
  TrainerOptions bad = o;
  bad.n_loss_inputs = 1;
  CHECK_THROWS_WITH_AS(Trainer{bad}, doctest::Contains("with n_loss_inputs = 1 it must take the model's 1 output(s)"),
                       ctrax::Error);
  bad = o;
  bad.has_weights = true;
  CHECK_THROWS_WITH_AS(Trainer{bad}, doctest::Contains("has_weights and id_to_mask must be unset"), ctrax::Error);
  bad = o;
  bad.n_loss_inputs = -1;
  CHECK_THROWS_WITH_AS(Trainer{bad}, doctest::Contains("n_loss_inputs must be >= 0, got -1"), ctrax::Error);
}

TEST_CASE("Trainer export_state and import_state carry a trainer under a prefix") {
  const fs::path dir = fresh_directory("export");
  TrainerOptions o = classifier_options(class_stream(16));
  Trainer a(o);
  for (int i = 0; i < 5; ++i) a.train_step();
  std::map<std::string, Tensor> tensors;
  io::ManifestFields fields;
  a.export_state(tensors, fields, "policy/");
  CHECK(tensors.count("policy/weights/0/kernel") == 1);
  CHECK(std::get<int64_t>(fields.at("policy/step")) == 5);
  io::CheckpointDirectory checkpoints(dir, 2);
  checkpoints.save(5, tensors, fields);

  Trainer b(classifier_options(class_stream(16)));
  const io::Checkpoint c = *checkpoints.load_latest();
  b.import_state(c, "policy/");
  CHECK(b.step() == 5);
  CHECK(bitwise_equal(a.weights(), b.weights()));
  CHECK(bitwise_equal(a.state(), b.state()));
  CHECK(bitwise_equal(a.slots(), b.slots()));
  CHECK(a.rng().words() == b.rng().words());
  // The two go on identically.
  CHECK(a.train_step().at("loss") == b.train_step().at("loss"));
  CHECK(bitwise_equal(a.weights(), b.weights()));

  // Another prefix, or another model, is refused and leaves the trainer as it was.
  CHECK_THROWS_AS(b.import_state(c, "value/"), ctrax::Error);
  TrainerOptions other = classifier_options(class_stream(16));
  other.model = Serial({Dense(8), Relu(), Dense(3)});
  Trainer d(other);
  CHECK_THROWS_WITH_AS(d.import_state(c, "policy/"), doctest::Contains("policy/weights/"), ctrax::Error);
  CHECK(d.step() == 0);
  fs::remove_all(dir);
}

TEST_CASE("Trainer set_weights and set_state check the tree against the model") {
  Trainer t(classifier_options(class_stream(16)));
  Tree state = t.state();
  CHECK_NOTHROW(t.set_state(state));
  CHECK_THROWS_WITH_AS(t.set_state(Tree()), doctest::Contains("Trainer::set_state"), ctrax::Error);
  Tree weights = t.weights();
  weights[0]["kernel"] = Tree(zeros({5, 16}));
  CHECK_THROWS_WITH_AS(t.set_weights(weights), doctest::Contains("weight 0/kernel is float32[5, 16]"), ctrax::Error);
}

// ---- The compiled step (TrainerOptions::compile, tensor/compile.h) --------------------------

namespace {

struct TrainerRun {
  Tree weights, state, slots;
  std::vector<Metrics> rows;
  CompileStats stats;
};

TrainerRun run_trainer(TrainerOptions o, bool compile, int64_t steps) {
  o.compile = compile;
  Trainer trainer(std::move(o));
  TrainerRun r;
  for (int64_t i = 0; i < steps; ++i) r.rows.push_back(trainer.train_step());
  r.weights = trainer.weights();
  r.state = trainer.state();
  r.slots = trainer.slots();
  r.stats = trainer.compile_stats();
  return r;
}

void check_same_run(const TrainerRun& a, const TrainerRun& b) {
  CHECK(bitwise_equal(a.weights, b.weights));
  CHECK(bitwise_equal(a.state, b.state));
  CHECK(bitwise_equal(a.slots, b.slots));
  REQUIRE(a.rows.size() == b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) CHECK(a.rows[i] == b.rows[i]);
}

}  // namespace

TEST_CASE("Trainer compiled steps equal eager steps bit for bit: MLP regression with Adam") {
  TrainerOptions o;
  o.model = Serial({Dense(16), Tanh(), Dense(16), Relu(), Dense(1)});
  o.loss = L2Loss();
  // The rate changes every step: the plan must not bake it in.
  o.optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = multifactor_schedule(), .clip_grad_norm = 0.5});
  o.train_stream = linear_stream(8);
  const TrainerRun eager = run_trainer(o, false, 12);
  const TrainerRun compiled = run_trainer(o, true, 12);
  check_same_run(eager, compiled);
  CHECK(eager.stats.replays == 0);
  CHECK(compiled.stats.recordings == 1);
  CHECK(compiled.stats.replays == 11);
}

TEST_CASE("Trainer compiled steps thread the model state: BatchNorm classifier, accuracy metric") {
  TrainerOptions o = classifier_options(class_stream(16));
  o.model = Serial({Dense(16), BatchNorm(), Relu(), Dense(3)});
  const TrainerRun eager = run_trainer(o, false, 10);
  const TrainerRun compiled = run_trainer(o, true, 10);
  check_same_run(eager, compiled);
  CHECK(compiled.stats.replays == 9);
}

TEST_CASE("Trainer with Dropout replays its plan with each step's key and gives the eager results") {
  // A plan that baked in the first step's dropout mask would drift from eager at step 2.
  std::vector<std::string> lines;
  const CompileLogSink previous = set_compile_log_sink([&](const std::string& l) { lines.push_back(l); });
  const TrainerOptions o = classifier_options(class_stream(16));
  const TrainerRun eager = run_trainer(o, false, 8);
  const TrainerRun compiled = run_trainer(o, true, 8);
  set_compile_log_sink(previous);
  check_same_run(eager, compiled);
  CHECK(compiled.stats.recordings == 1);
  CHECK(compiled.stats.replays == 7);
  CHECK(lines.empty());
}

TEST_CASE("Trainer compiled step allocates no tensor storage in steady state") {
  TrainerOptions o;
  o.model = Serial({Dense(64), Tanh(), Dense(64), Tanh(), Dense(2)});
  o.loss = L2Loss();
  o.optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3});
  const Tensor x = normal(Key(1), {64, 4});
  const Tensor y = normal(Key(2), {64, 2});
  o.train_stream = [x, y](int64_t) { return Batch{x, y}; };
  Trainer trainer(o);
  for (int i = 0; i < 3; ++i) trainer.train_step(Batch{x, y}, false);
  const AllocationStats before = allocation_stats();
  for (int i = 0; i < 5; ++i) trainer.train_step(Batch{x, y}, false);
  CHECK(allocation_stats().storages_allocated == before.storages_allocated);
  CHECK(trainer.compile_stats().replays == 7);
}

TEST_CASE("Trainer compiled step sees replaced weights and a new batch shape") {
  TrainerOptions o;
  o.model = Serial({Dense(8), Tanh(), Dense(1)});
  o.loss = L2Loss();
  o.optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-2});
  o.train_stream = linear_stream(4);
  auto run = [&](bool compile) {
    TrainerOptions c = o;
    c.compile = compile;
    Trainer t(c);
    t.train_step();
    t.train_step();
    t.set_weights(t.weights().map([](const Tensor& w) { return mul(w, 0.5); }));  // new storages
    t.train_step();
    t.train_step(linear_stream(7)(3));  // another signature
    t.train_step();
    return t.weights();
  };
  CHECK(bitwise_equal(run(false), run(true)));
}

TEST_CASE("Trainer compiled step still checks the batch: a bad class id throws on a replay") {
  TrainerOptions o = classifier_options(class_stream(8));
  o.model = Serial({Dense(8), Relu(), Dense(3)});
  Trainer trainer(o);
  trainer.train_step();
  trainer.train_step();
  CHECK(trainer.compile_stats().replays == 1);
  Batch bad = class_stream(8)(5);
  bad[1] = full({8}, 3.0, DType::int64);  // 3 classes: id 3 is out of range
  CHECK_THROWS_WITH_AS(trainer.train_step(bad), doctest::Contains("must be in [0, 3)"), Error);
}

TEST_CASE("Trainer compiled steps with alternating batch shapes thread the state through every plan") {
  TrainerOptions o = classifier_options(class_stream(16));
  o.model = Serial({Dense(16), BatchNorm(), Relu(), Dense(3)});
  auto run = [&](bool compile) {
    TrainerOptions c = o;
    c.compile = compile;
    Trainer t(c);
    std::vector<Metrics> rows;
    for (int64_t i = 0; i < 12; ++i) rows.push_back(t.train_step(class_stream(i % 3 == 0 ? 16 : (i % 3 == 1 ? 9 : 5))(i)));
    return std::make_tuple(t.weights(), t.state(), rows, t.compile_stats());
  };
  const auto [we, se, re, stats_e] = run(false);
  const auto [wc, sc, rc, stats_c] = run(true);
  CHECK(bitwise_equal(we, wc));
  CHECK(bitwise_equal(se, sc));
  CHECK(re == rc);
  CHECK(stats_c.recordings == 3);
  CHECK(stats_c.replays == 9);
}

TEST_CASE("Trainer state() held across steps of different plans shows the current statistics, and set_state's tensors stay the caller's") {
  TrainerOptions o = classifier_options(class_stream(16));
  o.model = Serial({Dense(16), BatchNorm(), Relu(), Dense(3)});
  for (const bool compile : {true, false}) {
    INFO("compile " << compile);
    TrainerOptions c = o;
    c.compile = compile;
    Trainer t(c);
    t.train_step(class_stream(16)(0));
    for (int64_t i = 1; i < 10; ++i) {
      const Tree held = t.state();
      const std::vector<double> before = held.leaves()[0].to_vector<double>();
      t.train_step(class_stream(i % 3 == 0 ? 16 : (i % 3 == 1 ? 9 : 5))(i));  // three plans share their buffers
      CHECK(bitwise_equal(held, t.state()));  // updated in place: the current values
      CHECK(held.leaves()[0].to_vector<double>() != before);
    }
    const Tree mine = t.state().map([](const Tensor& x) { return x.clone(); });
    const Tree copy = mine.map([](const Tensor& x) { return x.clone(); });
    t.set_state(mine);
    t.train_step(class_stream(16)(20));
    CHECK(bitwise_equal(mine, copy));  // the caller's tensors are not written
    CHECK_FALSE(bitwise_equal(t.state(), copy));
  }
}
