#include "tensor/device.h"

#include "tensor/error.h"

namespace nd {

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

Device parse_device(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  if (text == "auto") return cuda_available() ? Device::cuda(0) : Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  if (text.rfind("cuda:", 0) == 0) {
    std::string num = text.substr(5);
    ND_CHECK_INPUT(!num.empty() && num.find_first_not_of("0123456789") == std::string::npos,
                   "bad device '" << text << "' (expected cpu, cuda, cuda:N or auto)");
    return Device::cuda(std::stoi(num));
  }
  ND_FAIL_INPUT("bad device '" << text << "' (expected cpu, cuda, cuda:N or auto)");
}

}  // namespace nd
