// [<network>.optimizer] and its learning-rate schedules: one key table per optimizer and per
// schedule (see config_sections.h). Each optimizer's defaults, its learning rate's included, are
// its options struct's (optim/).
#include <ctrax/base/error.h>
#include <ctrax/optim/adafactor.h>
#include <ctrax/optim/adam.h>
#include <ctrax/optim/momentum.h>
#include <ctrax/optim/rmsprop.h>
#include <ctrax/optim/sgd.h>

#include "config_sections.h"

namespace ctrax::tools {

namespace {

constexpr double kInf = kAnyNumber;
constexpr int64_t kBig = kAnyCount;
constexpr double kBelowOne = 0.999999;

Schedule read_schedule(ConfigTable t);

// The keys every optimizer has: learning_rate (a number or a schedule table) and clip_grad_norm.
template <class Options>
void add_common_keys(OptionTable<Options>& t) {
  t.custom({"learning_rate", "number or table", "", ">= 0, or a schedule table (name = ...)", "the learning rate"},
           [](const Options& o) {
             return o.learning_rate.is_constant() ? config_text(o.learning_rate.constant()) : std::string("a schedule");
           },
           [](ConfigTable& c, Options& o) {
             if (c.has_table("learning_rate")) o.learning_rate = read_schedule(c.table("learning_rate"));
             else if (o.learning_rate.is_constant() || c.has("learning_rate"))
               o.learning_rate = c.number("learning_rate", o.learning_rate.constant(), 0.0, kInf);
           });
  t.optional_number("clip_grad_norm", &Options::clip_grad_norm, 0.0, kInf,
                    "clip the gradients' global L2 norm to this (> 0); none: no clipping");
}

template <class Optim, class Options>
OptimizerSpec optimizer_spec(std::string name, OptionTable<Options> table) {
  add_common_keys(table);
  std::vector<KeyDoc> keys = table.docs();
  return {std::move(name), std::move(keys), [table](ConfigTable& t) -> std::shared_ptr<Optimizer> {
            Options o;
            table.read(t, o);
            return std::make_shared<Optim>(o);
          }};
}

// Adam's and AdamW's moment keys.
template <class Options>
OptionTable<Options> adam_moment_keys() {
  OptionTable<Options> t;
  t.number("b1", &Options::b1, 0.0, kBelowOne, "the first moment's decay");
  t.number("b2", &Options::b2, 0.0, kBelowOne, "the second moment's decay");
  t.number("eps", &Options::eps, 1e-30, 1.0, "added to the second moment's root");
  return t;
}

OptionTable<AdamOptions> adam_keys() {
  OptionTable<AdamOptions> t = adam_moment_keys<AdamOptions>();
  t.number("weight_decay_rate", &AdamOptions::weight_decay_rate, 0.0, kBelowOne,
           "weight decay (Trax's, coupled to the rate)");
  return t;
}

OptionTable<AdamWOptions> adamw_keys() {
  OptionTable<AdamWOptions> t = adam_moment_keys<AdamWOptions>();
  t.number("weight_decay", &AdamWOptions::weight_decay, 0.0, kBelowOne, "decoupled weight decay (times the rate)");
  return t;
}

OptionTable<MomentumOptions> momentum_keys() {
  using O = MomentumOptions;
  OptionTable<O> t;
  t.number("mass", &O::mass, 0.0, kBelowOne, "the velocity's decay");
  t.number("weight_decay_rate", &O::weight_decay_rate, 0.0, kBelowOne, "weight decay");
  t.boolean("nesterov", &O::nesterov, "Nesterov's look-ahead");
  return t;
}

OptionTable<RMSPropOptions> rmsprop_keys() {
  using O = RMSPropOptions;
  OptionTable<O> t;
  t.number("gamma", &O::gamma, 0.0, kBelowOne, "the mean square's decay");
  t.number("eps", &O::eps, 1e-30, 1.0, "added to the mean square's root");
  t.number("initial_mean_square", &O::initial_mean_square, 0.0, kInf, "the mean square's first value");
  return t;
}

OptionTable<AdafactorOptions> adafactor_keys() {
  using O = AdafactorOptions;
  OptionTable<O> t;
  t.boolean("factored", &O::factored, "factor the second moment of matrices");
  t.boolean("multiply_by_parameter_scale", &O::multiply_by_parameter_scale, "scale updates by the weights' RMS");
  t.boolean("do_clipping", &O::do_clipping, "clip each update's RMS");
  t.boolean("do_momentum", &O::do_momentum, "keep a first moment");
  t.number("beta1", &O::beta1, 0.0, kBelowOne, "the first moment's decay");
  t.number("decay_rate", &O::decay_rate, 1e-9, kInf, "the second moment's decay exponent");
  t.number("clipping_threshold", &O::clipping_threshold, 1e-9, kInf, "the update RMS clip");
  t.number("weight_decay_rate", &O::weight_decay_rate, 0.0, kBelowOne, "weight decay");
  t.number("epsilon1", &O::epsilon1, 1e-300, 1.0, "added to the squared gradients");
  t.number("epsilon2", &O::epsilon2, 0.0, 1.0, "the parameter scale's floor");
  return t;
}

struct ConstantSchedule {
  double value = 1e-3;
};
struct LinearAnnealing {
  double initial = 1e-3;
  int64_t total_steps = 100000;
};

template <class Options>
ScheduleSpec schedule_spec(std::string name, OptionTable<Options> table, std::function<Schedule(const Options&)> make) {
  std::vector<KeyDoc> keys = table.docs();
  return {std::move(name), std::move(keys), [table, make](ConfigTable& t) {
            Options o;
            table.read(t, o);
            return make(o);
          }};
}

std::vector<ScheduleSpec> build_schedule_specs() {
  std::vector<ScheduleSpec> out;
  {
    OptionTable<ConstantSchedule> t;
    t.number("value", &ConstantSchedule::value, 0.0, kInf, "the rate");
    out.push_back(schedule_spec<ConstantSchedule>("constant", t, [](const ConstantSchedule& o) {
      return constant_schedule(o.value);
    }));
  }
  {
    using O = MultifactorOptions;
    OptionTable<O> t;
    t.custom({"factors", "string", "", "products of constant, linear_warmup, rsqrt_decay, ...", "Trax's factors"},
             [](const O& o) { return "\"" + o.factors + "\""; },
             [](ConfigTable& c, O& o) {
               o.factors = c.string("factors", o.factors);
               try {
                 multifactor_schedule(o);
               } catch (const Error& e) {
                 c.fail("factors", e.what());
               }
             });
    t.number("constant", &O::constant, 0.0, kInf, "the constant factor");
    t.integer("warmup_steps", &O::warmup_steps, 0, kBig, "linear_warmup's steps");
    t.number("decay_factor", &O::decay_factor, 0.0, kInf, "decay_every's factor");
    t.integer("steps_per_decay", &O::steps_per_decay, 1, kBig, "decay_every's period");
    t.integer("steps_per_cycle", &O::steps_per_cycle, 1, kBig, "cosine_decay's period");
    t.number("second_constant", &O::second_constant, 0.0, kInf, "two_constants' second value");
    t.integer("second_constant_step", &O::second_constant_step, 0, kBig, "two_constants' switch step");
    t.number("minimum", &O::minimum, 0.0, kInf, "the rate's floor");
    out.push_back(schedule_spec<O>("multifactor", t, [](const O& o) { return multifactor_schedule(o); }));
  }
  {
    OptionTable<LinearAnnealing> t;
    t.number("initial", &LinearAnnealing::initial, 0.0, kInf, "the rate at step 0");
    t.integer("total_steps", &LinearAnnealing::total_steps, 1, kBig, "the step where it reaches 0");
    out.push_back(schedule_spec<LinearAnnealing>("linear_annealing", t, [](const LinearAnnealing& o) {
      return linear_annealing_schedule(o.initial, o.total_steps);
    }));
  }
  return out;
}

template <class Spec>
const Spec& find_spec(const std::vector<Spec>& specs, const std::string& name) {
  for (const Spec& s : specs)
    if (s.name == name) return s;
  throw Error("unknown name " + name);  // unreachable: the name was checked against the list
}

template <class Spec>
std::vector<std::string> names_of(const std::vector<Spec>& specs) {
  std::vector<std::string> out;
  for (const Spec& s : specs) out.push_back(s.name);
  return out;
}

Schedule read_schedule(ConfigTable t) {
  const std::string name = t.choice("name", "constant", schedule_names());
  Schedule out = find_spec(schedule_specs(), name).read(t);
  t.finish();
  return out;
}

}  // namespace

const std::vector<OptimizerSpec>& optimizer_specs() {
  static const std::vector<OptimizerSpec> specs{
      optimizer_spec<Adam>("adam", adam_keys()),
      optimizer_spec<AdamW>("adamw", adamw_keys()),
      optimizer_spec<SGD>("sgd", OptionTable<SGDOptions>{}),
      optimizer_spec<Momentum>("momentum", momentum_keys()),
      optimizer_spec<RMSProp>("rmsprop", rmsprop_keys()),
      optimizer_spec<Adafactor>("adafactor", adafactor_keys()),
  };
  return specs;
}

std::vector<std::string> optimizer_names() { return names_of(optimizer_specs()); }

const std::vector<ScheduleSpec>& schedule_specs() {
  static const std::vector<ScheduleSpec> specs = build_schedule_specs();
  return specs;
}

std::vector<std::string> schedule_names() { return names_of(schedule_specs()); }

std::shared_ptr<Optimizer> read_optimizer(ConfigTable t) {
  const std::string name = t.choice("name", "adam", optimizer_names());
  std::shared_ptr<Optimizer> out = find_spec(optimizer_specs(), name).read(t);
  t.finish();
  return out;
}

}  // namespace ctrax::tools
