// --device of the commands that train (train, ablate, sweep), checked against this machine before
// any work: a GPU asked for where there is none is one error line that says how to run on the
// CPU instead, from the command line or from the config file that asked for it.
#pragma once
#include "cli/flags.h"
#include "tensor/device.h"

namespace nd::cli {

// The device --device names (cpu, cuda, cuda:N, or auto: cuda where this machine has a GPU, else
// cpu). nd::Error (input) when it is a GPU and there is none, or when auto found none and --dtype
// asks for a GPU's (bf16).
Device device_from_flags(const ParsedFlags& flags);

}  // namespace nd::cli
