// Trainer: see trainer.h. The step is value_and_grad of "model, then loss" with respect to the
// weights, followed by the optimizer's in-place update; checkpoints are io/checkpoint.h
// directories whose tensor names are the trees' paths.
#include "trainer.h"

#include <cmath>
#include <system_error>
#include <utility>

#include "../autograd/grad.h"
#include "../io/checkpoint.h"
#include "../base/error.h"
#include "../layers/metrics.h"
#include "../tensor/ops.h"
#include "adam.h"
#include "nccl_allreduce.h"

namespace ctrax {

namespace {

constexpr const char* kCheckpointKind = "ctrax.Trainer";

// "weights" + "/" + path, or "weights" for a leaf at the root.
std::string tensor_name(const std::string& prefix, const std::string& path) {
  return path.empty() ? prefix : prefix + "/" + path;
}

void add_tree(std::map<std::string, Tensor>& out, const std::string& prefix, const Tree& tree) {
  const std::vector<Tensor> leaves = tree.leaves();
  const std::vector<std::string> paths = tree.paths();
  for (size_t i = 0; i < leaves.size(); ++i) out.emplace(tensor_name(prefix, paths[i]), leaves[i]);
}

// The tree shaped like `like` whose leaves are the checkpoint's tensors "<prefix>/<path>"; every
// name, shape and dtype must match and the checkpoint must hold no other "<prefix>/..." tensor.
Tree tree_from_checkpoint(const io::Checkpoint& checkpoint, const std::string& prefix, const Tree& like,
                          const char* what) {
  const std::vector<Tensor> expected = like.leaves();
  const std::vector<std::string> paths = like.paths();
  std::vector<Tensor> leaves;
  leaves.reserve(expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const std::string name = tensor_name(prefix, paths[i]);
    auto it = checkpoint.tensors.find(name);
    CTRAX_REQUIRE(it != checkpoint.tensors.end(), "Trainer: checkpoint ", checkpoint.manifest_path.string(),
                  " has no tensor ", name, ", which the ", what, " needs (is it from another model?)");
    const Tensor& t = it->second;
    CTRAX_REQUIRE(t.dtype() == expected[i].dtype() && t.shape() == expected[i].shape(), "Trainer: checkpoint ",
                  checkpoint.manifest_path.string(), ": tensor ", name, " is ", dtype_name(t.dtype()),
                  to_string(t.shape()), ", the ", what, " expects ", dtype_name(expected[i].dtype()),
                  to_string(expected[i].shape()));
    leaves.push_back(t);
  }
  size_t count = 0;
  const std::string head = prefix + "/";
  for (const auto& [name, t] : checkpoint.tensors) {
    if (name == prefix || name.compare(0, head.size(), head) == 0) ++count;
  }
  if (count != expected.size()) {
    for (const auto& [name, t] : checkpoint.tensors) {
      if (name != prefix && name.compare(0, head.size(), head) != 0) continue;
      bool known = false;
      for (const std::string& p : paths) known = known || tensor_name(prefix, p) == name;
      CTRAX_REQUIRE(known, "Trainer: checkpoint ", checkpoint.manifest_path.string(), " has a tensor ", name,
                    " that the ", what, " does not have (is it from another model?)");
    }
  }
  return like.with_leaves(leaves);
}

// Row of metric names in the CSV file: the loss, the metrics in name order, then the
// optimizer's numbers.
std::vector<std::string> csv_columns(const std::map<std::string, LayerPtr>& metrics) {
  std::vector<std::string> columns{"loss"};
  for (const auto& [name, layer] : metrics) columns.push_back(name);
  for (const char* name : {"learning_rate", "gradients_l2", "weights_l2"}) columns.emplace_back(name);
  return columns;
}

double scalar_of(const Tensor& t, const std::string& what) {
  CTRAX_REQUIRE(t.numel() == 1, "Trainer: ", what, " must give one number, got a tensor of shape ",
                to_string(t.shape()));
  return t.item<double>();
}

}  // namespace

struct Trainer::Split {
  Stack inputs;
  Tensor targets;
  Tensor weights;
  Stack loss_inputs;  // with n_loss_inputs > 0: passed to the loss and metrics as they are
};

namespace {
CompileOptions compile_options(const char* name, bool enabled) {
  CompileOptions o;
  o.name = name;
  o.enabled = enabled;
  return o;
}
}  // namespace

Trainer::Trainer(TrainerOptions options)
    : options_(std::move(options)),
      compiled_step_([this](const std::vector<Tensor>& in, Key key) { return step_function(in, key); },
                     compile_options("the Trainer's step", options_.compile)),
      compiled_predict_([this](const std::vector<Tensor>& in) { return predict_function(in); },
                        compile_options("the Trainer's predict", options_.compile)),
      step_input_(zeros({}, DType::int64)),
      learning_rate_input_(zeros({}, DType::float64)) {
  validate_and_init();
}

Trainer::~Trainer() = default;

void Trainer::validate_and_init() {
  TrainerOptions& o = options_;
  CTRAX_REQUIRE(o.model != nullptr, "Trainer: options.model is required");
  CTRAX_REQUIRE(o.loss != nullptr, "Trainer: options.loss is required (e.g. CrossEntropyLoss() or L2Loss())");
  CTRAX_REQUIRE(static_cast<bool>(o.train_stream), "Trainer: options.train_stream is required");
  CTRAX_REQUIRE(o.checkpoints_to_keep >= 1, "Trainer: options.checkpoints_to_keep must be >= 1, got ",
                o.checkpoints_to_keep);
  CTRAX_REQUIRE(o.log_every_steps >= 1, "Trainer: options.log_every_steps must be >= 1, got ", o.log_every_steps);
  CTRAX_REQUIRE(o.n_loss_inputs >= 0, "Trainer: options.n_loss_inputs must be >= 0, got ", o.n_loss_inputs);
  CTRAX_REQUIRE(o.n_loss_inputs == 0 || (!o.has_weights && !o.id_to_mask),
                "Trainer: options.n_loss_inputs = ", o.n_loss_inputs,
                " passes the batch to the loss as it is; has_weights and id_to_mask must be unset");
  CTRAX_REQUIRE(o.eval_steps_per_epoch >= 0, "Trainer: options.eval_steps_per_epoch must be >= 0, got ",
                o.eval_steps_per_epoch);
  CTRAX_REQUIRE(o.metrics.count("loss") == 0,
                "Trainer: options.metrics must not name a metric \"loss\" (the loss is always reported as "
                "\"loss\")");
  if (!o.optimizer) o.optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = multifactor_schedule()});
  if (!o.eval_stream) o.eval_stream = o.train_stream;

  // Every loss and metric takes the model's outputs and the targets, and the weights when it
  // takes one more input.
  const int n_out = o.model->n_out();
  auto check_arity = [&](const Layer& layer, const std::string& role) {
    const int n = layer.n_in();
    if (o.n_loss_inputs > 0) {
      CTRAX_REQUIRE(n == n_out + o.n_loss_inputs, "Trainer: the ", role, " (", layer.name(), ") takes ", n,
                    " inputs; with n_loss_inputs = ", o.n_loss_inputs, " it must take the model's ", n_out,
                    " output(s) and the ", o.n_loss_inputs, " loss inputs (", n_out + o.n_loss_inputs, ")");
      CTRAX_REQUIRE(layer.n_out() == 1, "Trainer: the ", role, " (", layer.name(), ") must give 1 output, it gives ",
                    layer.n_out());
      return;
    }
    CTRAX_REQUIRE(n == n_out + 1 || n == n_out + 2, "Trainer: the ", role, " (", layer.name(), ") takes ", n,
                  " inputs; it must take the model's ", n_out, " output(s) and the targets, and optionally the weights (",
                  n_out + 1, " or ", n_out + 2, ")");
    CTRAX_REQUIRE(n == n_out + 2 || (!o.has_weights && !o.id_to_mask.has_value()), "Trainer: the ", role, " (",
                  layer.name(), ") takes no weights, but ",
                  std::string(o.has_weights ? "has_weights is set" : "id_to_mask is set"),
                  "; use a weighted loss or metric");
    CTRAX_REQUIRE(layer.n_out() == 1, "Trainer: the ", role, " (", layer.name(), ") must give 1 output, it gives ",
                  layer.n_out());
  };
  check_arity(*o.loss, "loss");
  for (const auto& [name, layer] : o.metrics) {
    CTRAX_REQUIRE(layer != nullptr, "Trainer: metric \"", name, "\" is a null layer");
    check_arity(*layer, "metric \"" + name + "\"");
  }

  // Initialise from the input signature (batch 0 of the train stream unless given).
  Split first;
  if (o.input_signature) {
    CTRAX_REQUIRE(static_cast<int>(o.input_signature->size()) == o.model->n_in(), "Trainer: input_signature has ",
                  o.input_signature->size(), " items, the model takes ", o.model->n_in());
  } else {
    first = split_batch(o.train_stream(0), "train", 0);
  }
  const Signature signature = o.input_signature ? *o.input_signature : signature_of(first.inputs);
  auto [init_key, train_key] = split(Key(o.seed));
  std::tie(weights_, state_) = o.model->init(signature, init_key);
  rng_ = train_key;
  slots_ = o.optimizer->init(weights_);

  if (!o.input_signature) init_heads(first);

  sinks_ = o.sinks;
  if (!o.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.output_dir, ec);
    CTRAX_REQUIRE(!ec, "Trainer: cannot create the output directory ", o.output_dir.string(), ": ", ec.message());
    sinks_.push_back(std::make_shared<CsvMetricsSink>(o.output_dir / "metrics.csv", csv_columns(o.metrics)));
    sinks_.push_back(std::make_shared<JsonLinesMetricsSink>(o.output_dir / "metrics.jsonl"));
    checkpoints_ = std::make_unique<io::CheckpointDirectory>(o.output_dir / "checkpoints", o.checkpoints_to_keep);
    if (o.restore) restore_checkpoint();
  }
  o.model->set_weights(weights_);
  o.model->set_state(state_);
}

Trainer::Split Trainer::split_batch(const Batch& batch, const char* stream, int64_t index) const {
  const int n_in = options_.model->n_in();
  if (options_.n_loss_inputs > 0) {
    const size_t expected = static_cast<size_t>(n_in + options_.n_loss_inputs);
    CTRAX_REQUIRE(batch.size() == expected, "Trainer: batch ", index, " of the ", stream, " stream has ",
                  batch.size(), " tensors, expected ", expected, " (", n_in, " model input(s), ",
                  options_.n_loss_inputs, " loss input(s))");
    Split s;
    s.inputs.assign(batch.begin(), batch.begin() + n_in);
    s.loss_inputs.assign(batch.begin() + n_in, batch.end());
    return s;
  }
  const size_t expected = static_cast<size_t>(n_in) + 1 + (options_.has_weights ? 1 : 0);
  CTRAX_REQUIRE(batch.size() == expected, "Trainer: batch ", index, " of the ", stream, " stream has ", batch.size(),
                " tensors, expected ", expected, " (", n_in, " model input(s), the targets",
                std::string(options_.has_weights ? ", the weights" : ""), ")");
  Split s;
  s.inputs.assign(batch.begin(), batch.begin() + n_in);
  s.targets = batch[static_cast<size_t>(n_in)];
  if (options_.has_weights) {
    s.weights = batch.back();
    CTRAX_REQUIRE(is_floating(s.weights.dtype()) || is_integer(s.weights.dtype()), "Trainer: batch ", index,
                  " of the ", stream, " stream has weights of dtype ", dtype_name(s.weights.dtype()),
                  ", expected a number type");
  } else {
    s.weights = ones(s.targets.shape(), DType::float32, s.targets.device());
  }
  if (options_.id_to_mask) s.weights = s.weights * mask_from_ids(s.targets, *options_.id_to_mask);
  return s;
}

// The losses and metrics are initialised from the first batch they see (at construction, or at
// the first step when the input signature was given). They must not have weights of their own:
// the trainer would not train them.
void Trainer::init_heads(const Split& split) {
  if (heads_ready_) return;
  const Stack outputs = options_.model->apply(split.inputs, weights_, state_, Key(), Mode::eval).outputs;
  auto init_head = [&](Layer& layer, const std::string& role) {
    const Tree w = layer.init(signature_of(loss_inputs(outputs, split, layer))).first;
    CTRAX_REQUIRE(w.num_leaves() == 0, "Trainer: the ", role, " (", layer.name(),
                  ") has weights; losses and metrics must be weightless");
  };
  init_head(*options_.loss, "loss");
  for (const auto& [name, layer] : options_.metrics) init_head(*layer, "metric \"" + name + "\"");
  heads_ready_ = true;
}

Stack Trainer::loss_inputs(const Stack& outputs, const Split& split, const Layer& layer) const {
  Stack items = outputs;
  if (options_.n_loss_inputs > 0) {
    items.insert(items.end(), split.loss_inputs.begin(), split.loss_inputs.end());
    return items;
  }
  items.push_back(split.targets);
  if (layer.n_in() == static_cast<int>(outputs.size()) + 2) items.push_back(split.weights);
  return items;
}

std::vector<Tensor> Trainer::metric_tensors(const Stack& outputs, const Split& split, Mode mode) const {
  std::vector<Tensor> values;
  for (const auto& [name, layer] : options_.metrics)
    values.push_back(
        layer->apply(loss_inputs(outputs, split, *layer), layer->weights(), layer->state(), Key(), mode).outputs[0]);
  return values;
}

Metrics Trainer::metrics_of(std::span<const Tensor> values) const {
  Metrics m;
  size_t i = 0;
  for (const auto& [name, layer] : options_.metrics) m[name] = scalar_of(values[i++], "metric \"" + name + "\"");
  return m;
}

Metrics Trainer::metrics_of(const Stack& outputs, const Split& split, Mode mode) const {
  return metrics_of(metric_tensors(outputs, split, mode));
}

Metrics Trainer::train_step(bool with_metrics) { return train_step(options_.train_stream(step_), with_metrics); }

std::vector<Tensor> Trainer::step_function(const std::vector<Tensor>& inputs, Key step_key) {
  const size_t n_state = state_.num_leaves();
  const size_t n_batch = inputs.size() - n_state - (step_updates_ ? 2 : 0);
  const Split s = split_batch(Batch(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(n_batch)), "train",
                              step_);
  const Tree state = state_.with_leaves(std::span<const Tensor>(inputs).subspan(n_batch, n_state));
  const Layer& model = *options_.model;
  const Layer& loss_layer = *options_.loss;
  // Aux carries the model's outputs (for the metrics) and its new state, undifferentiated.
  auto loss_fn = [&](const Tree& w) {
    LayerResult r = model.apply(s.inputs, w, state, step_key, Mode::train);
    Tensor loss = loss_layer.apply(loss_inputs(r.outputs, s, loss_layer), loss_layer.weights(), loss_layer.state(),
                                   Key(), Mode::train)
                      .outputs[0];
    Tree::List outputs(r.outputs.begin(), r.outputs.end());
    return std::make_pair(loss, Tree(Tree::List{Tree(std::move(outputs)), std::move(r.state)}));
  };
  auto result = value_and_grad(loss_fn)(weights_);
  std::vector<Tensor> out{result.value};
  if (!step_updates_)
    for (const Tensor& g : result.grad.leaves()) out.push_back(g);
  const std::vector<Tensor> outputs = result.aux[0].leaves();
  n_model_outputs_ = outputs.size();
  out.insert(out.end(), outputs.begin(), outputs.end());
  for (const Tensor& t : result.aux[1].leaves()) out.push_back(t);
  new_state_structure_ = result.aux[1];
  // The metrics of a logged step, from this forward pass (before the update), in the same plan.
  if (step_metrics_) {
    NoGradScope no_grad;
    for (const Tensor& m : metric_tensors(Stack(outputs.begin(), outputs.end()), s, Mode::train)) out.push_back(m);
  }
  if (step_updates_) {
    out.push_back(options_.optimizer->update_from_tensors(inputs[inputs.size() - 2], inputs.back(), result.grad,
                                                          weights_, slots_, step_stats_));
  }
  return out;
}

bool Trainer::update_in_step() {
  if (update_checked_generation_ != weights_generation_) {
    bool on_cpu = true;
    for (const Tensor& w : weights_.leaves()) on_cpu = on_cpu && w.device().is_cpu();
    const bool distributed = options_.communicator && options_.communicator->size() > 1;
    update_in_step_ = on_cpu && options_.optimizer->runs_in_plans() && !distributed;
    update_checked_generation_ = weights_generation_;
  }
  return update_in_step_;
}

Tree Trainer::averaged_over_ranks(const Tree& gradients) {
  const std::vector<Tensor> leaves_in = gradients.leaves();
  const Device device = leaves_in.empty() ? Device::cpu() : leaves_in.front().device();
  if (!nccl_decided_) {  // every rank reaches its first exchange at the same step
    nccl_ = NcclAllreduce::create(*options_.communicator, device);
    nccl_decided_ = true;
  }
  if (nccl_) {
    // On the GPU: the leaves side by side in float64, the rank-ordered mean, back into leaves.
    NoGradScope no_grad;
    std::vector<Tensor> wide;
    for (const Tensor& g : leaves_in) wide.push_back(g.to(DType::float64).reshape(Shape{g.numel()}));
    const Tensor mean = nccl_->mean(concatenate(wide).contiguous());
    std::vector<Tensor> leaves;
    int64_t offset = 0;
    for (const Tensor& g : leaves_in) {
      leaves.push_back(mean.slice(0, offset, offset + g.numel()).reshape(g.shape()).to(g.dtype()).contiguous());
      offset += g.numel();
    }
    return gradients.with_leaves(leaves);
  }
  // One collective for all the leaves: their values side by side, in float64 (exact for float32).
  // Without NCCL, gradients on a GPU go through host memory: the rank-ordered float64 sum is the
  // same bits wherever it is taken.
  std::vector<double> flat;
  for (const Tensor& g : gradients.leaves()) {
    const Tensor wide = g.to(Device::cpu()).to(DType::float64).contiguous();
    flat.insert(flat.end(), wide.data<double>(), wide.data<double>() + wide.numel());
  }
  dist::allreduce_sum(*options_.communicator, flat, /*divide_by_size=*/true);
  std::vector<Tensor> leaves;
  size_t offset = 0;
  for (const Tensor& g : gradients.leaves()) {
    const auto n = static_cast<size_t>(g.numel());
    leaves.push_back(from_vector(std::vector<double>(flat.begin() + static_cast<std::ptrdiff_t>(offset),
                                                     flat.begin() + static_cast<std::ptrdiff_t>(offset + n)),
                                 g.shape())
                         .to(g.dtype())
                         .to(g.device()));
    offset += n;
  }
  return gradients.with_leaves(leaves);
}

Metrics Trainer::train_step(const Batch& batch, bool with_metrics) {
  if (!heads_ready_) init_heads(split_batch(batch, "train", step_));
  const double learning_rate = options_.optimizer->learning_rate_at(step_) * lr_factor_;
  const std::pair<Key, Key> keys = split(rng_);
  const Key next_rng = keys.first;
  std::vector<Tensor> inputs(batch.begin(), batch.end());
  for (const Tensor& t : state_.leaves()) inputs.push_back(t);
  const bool logged = step_ % options_.log_every_steps == 0 && (with_metrics || !sinks_.empty());
  step_metrics_ = logged && !options_.metrics.empty();
  step_stats_ = logged;  // the optimizer's norms only for a row that is read
  step_updates_ = update_in_step();
  if (step_updates_) {
    step_input_.data<int64_t>()[0] = step_;
    learning_rate_input_.data<double>()[0] = learning_rate;
    inputs.push_back(step_input_);
    inputs.push_back(learning_rate_input_);
  }
  // The step's key is the call's key: a plan's dropout and other draws use each step's own.
  // Steps with and without metrics (or the optimizer's norms) are separate plans.
  const unsigned outputs = (step_metrics_ ? 1u : 0u) | (step_stats_ ? 2u : 0u);
  const std::vector<Tensor>& out =
      compiled_step_(inputs, keys.second, {weights_generation_, outputs, step_updates_ ? 1u : 0u});
  const std::span<const Tensor> results(out);
  const size_t n_grads = step_updates_ ? 0 : weights_.num_leaves();
  const size_t n_state = new_state_structure_.num_leaves();
  const size_t first_metric = 1 + n_grads + n_model_outputs_ + n_state;
  const double loss = scalar_of(out[0], "the loss");
  OptimizerStats stats;
  if (step_updates_) {
    const double* s = out.back().data<double>();
    stats = OptimizerStats{s[0], s[1], s[2] != 0};
  } else {
    Tree gradients = weights_.with_leaves(results.subspan(1, n_grads));
    if (options_.communicator && options_.communicator->size() > 1) gradients = averaged_over_ranks(gradients);
    stats = options_.optimizer->update(step_, learning_rate, gradients, weights_, slots_, logged);
  }
  // The plan's next call, with any signature, may rewrite its output buffers: the state is kept
  // in tensors of the Trainer's own (in place after the first step).
  if (keep_owned_leaves(state_, owned_state_, new_state_structure_,
                        results.subspan(1 + n_grads + n_model_outputs_, n_state)))
    options_.model->set_state(state_);
  rng_ = next_rng;
  ++step_;

  Metrics row;
  row["loss"] = loss;
  row["learning_rate"] = learning_rate;
  if (logged) {
    row["gradients_l2"] = stats.gradients_l2;
    row["weights_l2"] = stats.weights_l2;
    for (const auto& [name, value] : metrics_of(results.subspan(first_metric, step_metrics_ ? options_.metrics.size() : 0)))
      row[name] = value;
    log(step_, "train", row);
  }
  return row;
}

void Trainer::set_learning_rate_factor(double factor) {
  CTRAX_REQUIRE(std::isfinite(factor) && factor >= 0.0, "Trainer: the learning-rate factor must be finite and >= 0, got ",
                factor);
  lr_factor_ = factor;
}

Metrics Trainer::train_epoch(int64_t n_steps) {
  CTRAX_REQUIRE(n_steps >= 0, "Trainer::train_epoch: n_steps must be >= 0, got ", n_steps);
  Metrics last;
  for (int64_t i = 0; i < n_steps; ++i) last = train_step();
  if (options_.eval_steps_per_epoch > 0) evaluate(options_.eval_steps_per_epoch);
  save_checkpoint();
  return last;
}

Metrics Trainer::evaluate(int64_t n_steps) {
  CTRAX_REQUIRE(n_steps >= 1, "Trainer::evaluate: n_steps must be >= 1, got ", n_steps);
  Metrics sum;
  NoGradScope no_grad;
  for (int64_t i = 0; i < n_steps; ++i) {
    const Split s = split_batch(options_.eval_stream(i), "eval", i);
    init_heads(s);
    const Stack outputs = options_.model->apply(s.inputs, weights_, state_, Key(), Mode::eval).outputs;
    const Layer& loss_layer = *options_.loss;
    sum["loss"] += scalar_of(loss_layer
                                 .apply(loss_inputs(outputs, s, loss_layer), loss_layer.weights(), loss_layer.state(),
                                        Key(), Mode::eval)
                                 .outputs[0],
                             "the loss");
    for (const auto& [name, value] : metrics_of(outputs, s, Mode::eval)) sum[name] += value;
  }
  for (auto& [name, value] : sum) value /= static_cast<double>(n_steps);
  log(step_, "eval", sum);
  return sum;
}

void Trainer::log(int64_t step, const char* phase, const Metrics& metrics) {
  for (const auto& sink : sinks_) sink->write(step, phase, metrics);
}

Stack Trainer::predict(const Stack& inputs) const {
  std::vector<Tensor> in(inputs.begin(), inputs.end());
  n_predict_inputs_ = in.size();
  for (const Tensor& t : state_.leaves()) in.push_back(t);
  // The state's leaves are inputs (training replaces them); the weights, updated in place, are
  // read by the plan, and replacing them (a new generation, the guard) records a new plan.
  const std::vector<Tensor>& out = compiled_predict_(in, weights_generation_);
  Stack result;
  result.reserve(out.size());
  for (const Tensor& t : out) result.push_back(t.clone());  // the plan reuses its outputs' buffers
  return result;
}

std::vector<Tensor> Trainer::predict_function(const std::vector<Tensor>& inputs) const {
  const Stack x(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(n_predict_inputs_));
  const Tree state = state_.with_leaves(std::span<const Tensor>(inputs).subspan(n_predict_inputs_));
  return options_.model->apply(x, weights_, state, Key(), Mode::eval).outputs;
}

namespace {

// Throws unless `given` has the structure, shapes and dtypes of `now` (what: "weight", "state").
void require_same_tree(const Tree& now, const Tree& given, const char* function, const char* what) {
  require_same_structure(now, given, function);
  const std::vector<Tensor> a = now.leaves();
  const std::vector<Tensor> b = given.leaves();
  const std::vector<std::string> paths = now.paths();
  for (size_t i = 0; i < a.size(); ++i) {
    CTRAX_REQUIRE(a[i].shape() == b[i].shape() && a[i].dtype() == b[i].dtype(), function, ": ", what, " ",
                  paths[i], " is ", dtype_name(b[i].dtype()), to_string(b[i].shape()), ", the model has ",
                  dtype_name(a[i].dtype()), to_string(a[i].shape()));
  }
}

}  // namespace

void Trainer::set_weights(Tree weights) {
  require_same_tree(weights_, weights, "Trainer::set_weights", "weight");
  // The optimizer updates weights in place, so they must own contiguous memory.
  weights_ = weights.map([](const Tensor& t) { return t.contiguous().clone(); });
  ++weights_generation_;
  options_.model->set_weights(weights_);
}

void Trainer::set_state(Tree state) {
  require_same_tree(state_, state, "Trainer::set_state", "state");
  state_ = std::move(state);
  owned_state_.clear();  // the caller's tensors: never written in place
  options_.model->set_state(state_);
}

void Trainer::export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields,
                           const std::string& prefix) const {
  add_tree(tensors, prefix + "weights", weights_);
  add_tree(tensors, prefix + "state", state_);
  add_tree(tensors, prefix + "slots", slots_);
  fields[prefix + "optimizer"] = std::string(options_.optimizer->name());
  fields[prefix + "step"] = step_;
  fields[prefix + "rng_0"] = static_cast<int64_t>(rng_.words()[0]);
  fields[prefix + "rng_1"] = static_cast<int64_t>(rng_.words()[1]);
}

void Trainer::import_state(const io::Checkpoint& c, const std::string& prefix) {
  const std::string where = c.manifest_path.string();
  CTRAX_REQUIRE(c.string_field(prefix + "optimizer") == options_.optimizer->name(), "Trainer: checkpoint ", where,
                " holds the slots of optimizer ", c.string_field(prefix + "optimizer"), ", this trainer uses ",
                options_.optimizer->name());
  const int64_t rng_0 = c.int_field(prefix + "rng_0");
  const int64_t rng_1 = c.int_field(prefix + "rng_1");
  CTRAX_REQUIRE(rng_0 >= 0 && rng_0 <= 0xffffffffLL && rng_1 >= 0 && rng_1 <= 0xffffffffLL, "Trainer: checkpoint ",
                where, " has rng words ", rng_0, ", ", rng_1, " outside [0, 2^32)");
  const int64_t step = c.int_field(prefix + "step");
  CTRAX_REQUIRE(step >= 0, "Trainer: checkpoint ", where, " has a negative step ", step);
  // Build everything first, so a bad checkpoint leaves the trainer as it was.
  Tree weights = tree_from_checkpoint(c, prefix + "weights", weights_, "model's weights");
  Tree state = tree_from_checkpoint(c, prefix + "state", state_, "model's state");
  Tree slots =
      tree_from_checkpoint(c, prefix + "slots", slots_, std::string(options_.optimizer->name()).append(" slots").c_str());
  weights_ = std::move(weights);
  state_ = std::move(state);
  owned_state_.clear();
  slots_ = std::move(slots);
  ++weights_generation_;
  rng_ = Key(static_cast<uint32_t>(rng_0), static_cast<uint32_t>(rng_1));
  step_ = step;
  options_.model->set_weights(weights_);
  options_.model->set_state(state_);
  for (const auto& sink : sinks_) sink->truncate_after(step_);
}

void Trainer::save_checkpoint() {
  if (!checkpoints_) return;
  std::map<std::string, Tensor> tensors;
  io::ManifestFields fields;
  fields["kind"] = std::string(kCheckpointKind);
  export_state(tensors, fields, "");
  checkpoints_->save(step_, tensors, fields);
}

bool Trainer::restore_checkpoint() {
  if (!checkpoints_) return false;
  std::optional<io::Checkpoint> c = checkpoints_->load_latest();
  if (!c) return false;
  CTRAX_REQUIRE(c->string_field("kind") == kCheckpointKind, "Trainer: checkpoint ", c->manifest_path.string(),
                " was written by ", c->string_field("kind"), ", not by a ", kCheckpointKind);
  CTRAX_REQUIRE(c->int_field("step") == c->step, "Trainer: checkpoint ", c->manifest_path.string(),
                " says step ", c->int_field("step"), " but is numbered ", c->step);
  import_state(*c, "");
  return true;
}

}  // namespace ctrax
