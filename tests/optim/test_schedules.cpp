// Learning-rate schedules: each multifactor factor, Trax's default and common configurations, and
// linear annealing, at the steps around the warm-up and decay boundaries against values worked
// out by hand (in the comments), plus every argument the factories refuse.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <ctrax/optim/schedules.h>

#include "../test_util.h"

using namespace ctrax;
using test::check_error;

namespace {

// Relative closeness: the schedules do a handful of double operations, so 1e-13 is loose.
void check_near(double actual, double expected) {
  INFO("actual " << actual << ", expected " << expected);
  CHECK(std::abs(actual - expected) <= 1e-13 * std::abs(expected));
}

Schedule multifactor(const std::string& factors, MultifactorOptions o = {}) {
  o.factors = factors;
  return multifactor_schedule(o);
}

}  // namespace

TEST_CASE("Schedules: Trax's default multifactor is 0.1 * min(1, step/400) / sqrt(max(step, 400))") {
  const Schedule lr = multifactor_schedule();
  CHECK(lr(0) == 0.0);                          // warm-up starts at 0 with 0-based steps
  check_near(lr(1), 0.1 * (1.0 / 400) / 20.0);  // 1.25e-5
  check_near(lr(1), 1.25e-5);
  check_near(lr(200), 0.0025);                  // 0.1 * 0.5 / 20
  check_near(lr(399), 0.0049875);               // 0.1 * 0.9975 / 20
  check_near(lr(400), 0.005);                   // 0.1 / sqrt(400)
  check_near(lr(800), 0.1 / std::sqrt(800.0));  // 0.0035355339...
  check_near(lr(1600), 0.0025);                 // 0.1 / 40
  check_near(lr(40000), 0.0005);                // 0.1 / 200
}

TEST_CASE("Schedules: constant * linear_warmup with constant 0.0025 and warm-up 100") {
  MultifactorOptions o;
  o.factors = "constant * linear_warmup";
  o.constant = 0.0025;
  o.warmup_steps = 100;
  const Schedule lr = multifactor_schedule(o);
  CHECK(lr(0) == 0.0);
  check_near(lr(1), 2.5e-5);
  check_near(lr(50), 0.00125);
  check_near(lr(99), 0.002475);
  check_near(lr(100), 0.0025);
  check_near(lr(200), 0.0025);
  check_near(lr(1000000), 0.0025);
}

TEST_CASE("Schedules: the Transformer configuration constant 1 with warm-up 8000") {
  MultifactorOptions o;
  o.constant = 1.0;
  o.warmup_steps = 8000;
  const Schedule lr = multifactor_schedule(o);
  CHECK(lr(0) == 0.0);
  check_near(lr(4000), 0.5 / std::sqrt(8000.0));
  check_near(lr(8000), 1.0 / std::sqrt(8000.0));
  check_near(lr(32000), 1.0 / std::sqrt(32000.0));
}

TEST_CASE("Schedules: single factors") {
  MultifactorOptions o;
  o.warmup_steps = 100;
  SUBCASE("constant alone ignores the warm-up") {
    const Schedule lr = multifactor("constant", o);
    for (int64_t s : {0, 1, 99, 100, 200, 100000}) check_near(lr(s), 0.1);
  }
  SUBCASE("linear_warmup") {
    const Schedule lr = multifactor("linear_warmup", o);
    CHECK(lr(0) == 0.0);
    check_near(lr(1), 0.01);
    check_near(lr(99), 0.99);
    CHECK(lr(100) == 1.0);
    CHECK(lr(200) == 1.0);
  }
  SUBCASE("rsqrt_decay is flat at 1/sqrt(warmup) during the warm-up") {
    const Schedule lr = multifactor("rsqrt_decay", o);
    check_near(lr(0), 0.1);
    check_near(lr(99), 0.1);
    check_near(lr(100), 0.1);
    check_near(lr(400), 0.05);
    check_near(lr(10000), 0.01);
  }
  SUBCASE("rsqrt_normalized_decay is 1 until the warm-up ends") {
    const Schedule lr = multifactor("rsqrt_normalized_decay", o);
    check_near(lr(0), 1.0);
    check_near(lr(1), 1.0);
    check_near(lr(100), 1.0);
    check_near(lr(400), 0.5);
    check_near(lr(900), 1.0 / 3.0);
  }
  SUBCASE("decay_every halves every steps_per_decay steps") {
    o.steps_per_decay = 10;
    const Schedule lr = multifactor("decay_every", o);
    CHECK(lr(0) == 1.0);
    CHECK(lr(9) == 1.0);
    CHECK(lr(10) == 0.5);
    CHECK(lr(19) == 0.5);
    CHECK(lr(20) == 0.25);
    CHECK(lr(35) == 0.125);
  }
  SUBCASE("cosine_decay: flat during the warm-up, half a cosine per cycle, restarting") {
    o.warmup_steps = 10;
    o.steps_per_cycle = 100;
    const Schedule lr = multifactor("cosine_decay", o);
    CHECK(lr(0) == 1.0);
    CHECK(lr(10) == 1.0);
    check_near(lr(35), 0.5 + 0.5 * std::sqrt(0.5));  // progress 0.25: (1 + cos(pi/4)) / 2
    check_near(lr(60), 0.5);                         // progress 0.5
    CHECK(std::abs(lr(109) - 0.000246719817134) < 1e-14);  // (1 - cos(0.01 pi)) / 2
    CHECK(lr(110) == 1.0);                           // progress 1 mod 1 = 0: the next cycle
    check_near(lr(160), 0.5);
  }
  SUBCASE("two_constants switches at second_constant_step") {
    o.constant = 0.1;
    o.second_constant = 0.01;
    o.second_constant_step = 1000;
    const Schedule lr = multifactor("two_constants", o);
    CHECK(lr(0) == 0.1);
    CHECK(lr(999) == 0.1);
    CHECK(lr(1000) == 0.01);
    CHECK(lr(5000) == 0.01);
    // Trax multiplies by `constant` again when both factors are listed.
    const Schedule both = multifactor("constant * two_constants", o);
    check_near(both(0), 0.01);
    check_near(both(1000), 0.001);
  }
}

TEST_CASE("Schedules: factor names are trimmed and combined with decay_every and the minimum") {
  MultifactorOptions o;
  o.factors = "  constant*linear_warmup\t*\tdecay_every  ";
  o.constant = 2.0;
  o.warmup_steps = 4;
  o.steps_per_decay = 8;
  o.decay_factor = 0.1;
  o.minimum = 0.05;
  const Schedule lr = multifactor_schedule(o);
  CHECK(lr(0) == 0.05);    // 0 raised to the minimum
  CHECK(lr(1) == 0.5);     // 2 * 1/4
  CHECK(lr(4) == 2.0);
  CHECK(lr(7) == 2.0);
  check_near(lr(8), 0.2);  // 2 * 0.1
  CHECK(lr(16) == 0.05);   // 2 * 0.01 = 0.02, below the minimum
}

TEST_CASE("Schedules: constant and linear annealing") {
  const Schedule c = constant_schedule(3e-4);
  CHECK(c(0) == 3e-4);
  CHECK(c(123456789) == 3e-4);
  CHECK(constant_schedule(0.0)(5) == 0.0);

  const Schedule lin = linear_annealing_schedule(3e-4, 100);
  CHECK(lin(0) == 3e-4);
  check_near(lin(25), 2.25e-4);
  check_near(lin(50), 1.5e-4);
  check_near(lin(99), 3e-6);
  CHECK(lin(100) == 0.0);
  CHECK(lin(101) == 0.0);
  CHECK(lin(1000000) == 0.0);
  const Schedule one = linear_annealing_schedule(1.0, 1);
  CHECK(one(0) == 1.0);
  CHECK(one(1) == 0.0);
}

TEST_CASE("Schedules: bad factor strings are refused naming the factor and the known ones") {
  check_error([] { multifactor("constant * linear_warmpu"); },
              {"unknown factor \"linear_warmpu\"", "known factors: constant, linear_warmup, rsqrt_decay, "
                                                   "rsqrt_normalized_decay, decay_every, cosine_decay, two_constants"});
  check_error([] { multifactor("Constant"); }, {"unknown factor \"Constant\""});
  check_error([] { multifactor(""); }, {"at least one factor", "empty string"});
  check_error([] { multifactor("   "); }, {"at least one factor"});
  check_error([] { multifactor("constant * * linear_warmup"); }, {"empty factor", "constant * * linear_warmup"});
  check_error([] { multifactor("constant *"); }, {"empty factor"});
  check_error([] { multifactor("* constant"); }, {"empty factor"});
}

TEST_CASE("Schedules: bad multifactor options are refused naming the option and the value") {
  MultifactorOptions o;
  o.warmup_steps = 0;
  check_error([&] { multifactor("linear_warmup", o); }, {"linear_warmup", "warmup_steps", ">= 1", "got 0"});
  check_error([&] { multifactor("rsqrt_decay", o); }, {"rsqrt_decay", "infinite at step 0", "got 0"});
  check_error([&] { multifactor("rsqrt_normalized_decay", o); }, {"rsqrt_normalized_decay", "0/0", "got 0"});
  // A factor that does not read warmup_steps does not care.
  CHECK(multifactor("constant * decay_every", o)(0) == 0.1);
  CHECK(multifactor("cosine_decay", o)(0) == 1.0);
  o.warmup_steps = -3;
  check_error([&] { multifactor("linear_warmup", o); }, {"warmup_steps", "got -3"});
  check_error([&] { multifactor("cosine_decay", o); }, {"cosine_decay", "warmup_steps", ">= 0", "got -3"});

  o = {};
  o.steps_per_decay = 0;
  check_error([&] { multifactor("decay_every", o); }, {"steps_per_decay", ">= 1", "got 0"});
  o = {};
  o.steps_per_cycle = -1;
  check_error([&] { multifactor("cosine_decay", o); }, {"steps_per_cycle", ">= 1", "got -1"});
  o = {};
  o.second_constant_step = -1;
  check_error([&] { multifactor("two_constants", o); }, {"second_constant_step", "got -1"});

  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {-0.5, nan, inf}) {
    o = {};
    o.constant = bad;
    check_error([&] { multifactor_schedule(o); }, {"constant", "finite number >= 0"});
    o = {};
    o.decay_factor = bad;
    check_error([&] { multifactor_schedule(o); }, {"decay_factor", "finite number >= 0"});
    o = {};
    o.second_constant = bad;
    check_error([&] { multifactor_schedule(o); }, {"second_constant", "finite number >= 0"});
    o = {};
    o.minimum = bad;
    check_error([&] { multifactor_schedule(o); }, {"minimum", "finite number >= 0"});
  }
  o = {};
  o.constant = -2.0;
  check_error([&] { multifactor_schedule(o); }, {"constant must be a finite number >= 0, got -2"});
}

TEST_CASE("Schedules: constant and linear annealing refuse bad arguments, every schedule a negative step") {
  check_error([] { constant_schedule(-1e-3); }, {"constant_schedule", "value", "got -0.001"});
  check_error([] { constant_schedule(std::numeric_limits<double>::infinity()); }, {"value", "finite"});
  check_error([] { linear_annealing_schedule(-0.1, 10); }, {"linear_annealing_schedule", "initial", "got -0.1"});
  check_error([] { linear_annealing_schedule(std::nan(""), 10); }, {"initial", "finite"});
  check_error([] { linear_annealing_schedule(0.1, 0); }, {"total_steps", ">= 1", "got 0"});
  check_error([] { linear_annealing_schedule(0.1, -5); }, {"total_steps", "got -5"});

  check_error([] { constant_schedule(0.1)(-1); }, {"constant_schedule", "step must be >= 0", "got -1"});
  check_error([] { multifactor_schedule()(-1); }, {"multifactor_schedule", "step must be >= 0", "got -1"});
  check_error([] { linear_annealing_schedule(0.1, 10)(-7); }, {"linear_annealing_schedule", "got -7"});
}

TEST_CASE("LearningRate: a value or a schedule, each step's rate checked") {
  const ctrax::LearningRate constant = 0.25;
  CHECK(constant.is_constant());
  CHECK(constant.at(0) == 0.25);
  CHECK(constant.at(1000000) == 0.25);
  const ctrax::LearningRate scheduled = ctrax::linear_annealing_schedule(1.0, 4);
  CHECK_FALSE(scheduled.is_constant());
  CHECK(scheduled.at(1) == 0.75);
  const ctrax::LearningRate lambda = [](int64_t step) { return step < 2 ? 0.5 : std::nan(""); };
  CHECK(lambda.at(1) == 0.5);
  CHECK_THROWS_WITH_AS(lambda.at(2), doctest::Contains("learning_rate: the schedule gave nan at step 2"), ctrax::Error);
  CHECK_THROWS_WITH_AS(ctrax::LearningRate(-0.5), doctest::Contains("learning_rate must be >= 0 and finite, got -0.5"),
                       ctrax::Error);
  CHECK_THROWS_WITH_AS(ctrax::LearningRate{ctrax::Schedule{}}, doctest::Contains("the schedule is empty"), ctrax::Error);
}
