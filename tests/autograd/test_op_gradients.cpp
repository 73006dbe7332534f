// The table-driven gradient test: every differentiable op, several shapes and layouts each,
// checked against float64 central differences (cases in gradient_cases_*.cpp).
#include <doctest/doctest.h>

#include <map>
#include <set>

#include <ctrax/base/op_list.h>

#include "gradient_cases.h"

using namespace ctrax;

TEST_CASE("autograd: every differentiable op has gradient cases, and no case names an unknown op") {
  std::set<std::string> covered;
  for (const test::GradientCase& c : test::gradient_case_registry()) covered.insert(c.op);
  std::set<std::string> differentiable, all;
#define CTRAX_COLLECT(name, diff, result) \
  all.insert(#name);              \
  if (diff) differentiable.insert(#name);
  CTRAX_FOR_EACH_OP(CTRAX_COLLECT)
#undef CTRAX_COLLECT
  for (const std::string& op : differentiable) {
    INFO("differentiable op without a gradient case: " << op);
    CHECK(covered.count(op) == 1);
  }
  for (const std::string& op : covered) {
    INFO("gradient case for an op that op_list.h does not mark differentiable: " << op);
    CHECK(differentiable.count(op) == 1);
  }
}

TEST_CASE("autograd: gradcheck of every differentiable op") {
  std::map<std::string, int> per_op;
  for (const test::GradientCase& c : test::gradient_case_registry()) {
    ++per_op[c.op];
    INFO("op " << c.op << " (" << c.label << ")");
    GradcheckResult r;
    try {
      r = gradcheck(c.f, c.inputs, c.options);
    } catch (const std::exception& e) {  // one broken case must not hide the later ones
      FAIL_CHECK("threw: " << std::string(e.what()));
      continue;
    }
    INFO(r.message << "; max abs error " << r.max_abs_error);
    CHECK(r.ok);
  }
  // "Several shapes each": at least two cases per op.
  for (const auto& op_count : per_op) {
    const std::string& op = op_count.first;
    const int n = op_count.second;
    INFO("op " << op << " has only " << n << " gradient case");
    CHECK(n >= 2);
  }
}
