// The run configuration's reference: every section and key with its type, default, range and
// meaning, generated from the key tables the reader uses (so it cannot drift from the code).
// `ctrax list keys` prints it; docs/configs.md is its output, checked by a test.
#pragma once

#include <string>
#include <vector>

#include "option_table.h"

namespace ctrax::tools {

struct SectionDoc {
  std::string title;       // "[task]", "[ppo]"
  std::string applies_to;  // one line: which configurations have it
  std::vector<KeyDoc> keys;
};

// Every section, in the order a config file lists them; registered algorithms included.
std::vector<SectionDoc> config_reference();
// config_reference() as the Markdown of docs/configs.md.
std::string config_reference_markdown();

}  // namespace ctrax::tools
