// Every op of base/op_list.h must have a reference test (declared with CTRAX_OPS_TESTED in
// the file that tests it). An op added to the engine without one makes this test fail.
#include <ctrax/base/op_list.h>

#include "test_util.h"

TEST_CASE("op coverage: every op in op_list.h has a reference test") {
  const auto& tested = ctrax::test::ops_with_reference_tests();
  for (int i = 0; i < ctrax::kOpCount; ++i) {
    INFO("op: " << ctrax::kOpNames[i]);
    CHECK(tested.count(ctrax::kOpNames[i]) == 1);
  }
  // and nothing is declared tested that the engine does not list (catches typos)
  for (const std::string& name : tested) {
    bool listed = false;
    for (int i = 0; i < ctrax::kOpCount; ++i) listed = listed || name == ctrax::kOpNames[i];
    INFO("declared tested but not in op_list.h: " << name);
    CHECK(listed);
  }
}
