// Switches read from the environment: the NANODIST_* settings that turn a default off (or an
// alternative on) to measure the difference, each documented where it is read.
#pragma once

namespace nd {

// Whether environment variable `name` is set to exactly `value`.
bool env_equals(const char* name, const char* value);

}  // namespace nd
