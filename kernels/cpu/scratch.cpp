// Sizes in words for the out-of-memory message of scratch.h.
#include "kernels/cpu/scratch.h"

#include <cstdio>

namespace nd::cpu {

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (bytes >= 1000.0 && u < 5) bytes /= 1000.0, ++u;
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return text;
}

}  // namespace nd::cpu
