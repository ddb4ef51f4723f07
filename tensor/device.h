// Where a tensor lives: the host, or one CUDA device.
#pragma once
#include <string>

namespace nd {

struct Device {
  enum class Kind { CPU, CUDA };
  Kind kind = Kind::CPU;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int index = 0) { return {Kind::CUDA, index}; }
  bool is_cpu() const { return kind == Kind::CPU; }
  bool is_cuda() const { return kind == Kind::CUDA; }
  bool operator==(const Device& o) const { return kind == o.kind && (is_cpu() || index == o.index); }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const;
};

// "cpu", "cuda", "cuda:N", or "auto": cuda:0 when cuda_available(), else cpu.
Device parse_device(const std::string& text);

// True when this build has the CUDA backend and the machine has at least one GPU.
bool cuda_available();

// The GPU's marketing name (e.g. "NVIDIA H200"); "" for the CPU or in a build without CUDA.
std::string cuda_device_name(int device);

}  // namespace nd
