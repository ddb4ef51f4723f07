// The checks validate_train_config makes too, made first with the origin of the value: the
// experiment configs set `device` and `dtype` in a file, which the user must be able to find.
#include "cli/device_flag.h"

#include "tensor/error.h"

namespace nd::cli {

Device device_from_flags(const ParsedFlags& flags) {
  const std::string text = flags.get_string("device");
  const Device device = parse_device(text);
  const std::string dtype = flags.get_string("dtype");
  const bool gpu_dtype = dtype == "bf16";
  ND_CHECK_INPUT(!device.is_cuda() || cuda_available(),
                 "device " << text << " (" << flags.origin("device") << ") but this machine has no CUDA GPU (or this "
                           << "build no CUDA); run on the CPU with --device cpu" << (gpu_dtype ? " --dtype f32" : "")
                           << ", or pass --device auto (a GPU where there is one, else the CPU)");
  ND_CHECK_INPUT(text != "auto" || device.is_cuda() || !gpu_dtype,
                 "device auto found no CUDA GPU, and --dtype " << dtype << " (" << flags.origin("dtype")
                                                               << ") needs one; pass --dtype f32 to run on the CPU");
  return device;
}

}  // namespace nd::cli
