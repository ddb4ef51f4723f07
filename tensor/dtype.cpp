#include "tensor/dtype.h"

#include "tensor/error.h"

namespace nd {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::BF16: return 2;
    case DType::I32: return 4;
    case DType::U16: return 2;
    case DType::F64: return 8;
    case DType::F16: return 2;
  }
  ND_FAIL("unknown dtype");
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::U16: return "u16";
    case DType::F64: return "f64";
    case DType::F16: return "f16";
  }
  return "?";
}

DType parse_dtype(const std::string& name) {
  for (DType t : {DType::F32, DType::BF16, DType::I32, DType::U16, DType::F64, DType::F16})
    if (name == dtype_name(t)) return t;
  if (name == "fp16") return DType::F16;  // --dtype's spelling
  ND_FAIL_INPUT("unknown dtype '" << name << "' (expected f32, bf16, f16 (fp16), i32, u16 or f64)");
}

}  // namespace nd
