#include "device.h"

#include <cstdlib>

#include "../base/error.h"

namespace ctrax {

std::ostream& operator<<(std::ostream& out, Device device) {
  if (device.is_cpu()) return out << "cpu";
  return out << "cuda:" << device.index;
}

Device parse_device(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5) {
    const std::string digits = text.substr(5);
    if (digits.find_first_not_of("0123456789") == std::string::npos && digits.size() < 4)
      return Device::cuda(std::atoi(digits.c_str()));
  }
  CTRAX_THROW("unknown device \"", text, "\" (expected cpu, cuda or cuda:N)");
}

}  // namespace ctrax
