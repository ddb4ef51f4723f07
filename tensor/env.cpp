#include "tensor/env.h"

#include <cstdlib>
#include <cstring>

namespace nd {

bool env_equals(const char* name, const char* value) {
  const char* set = std::getenv(name);
  return set != nullptr && std::strcmp(set, value) == 0;
}

}  // namespace nd
