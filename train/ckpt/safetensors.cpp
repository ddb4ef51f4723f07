// The safetensors reader (safetensors.h), over a read-only mapping of the file.
#include "train/ckpt/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "data/mapped_file.h"
#include "tensor/error.h"
#include "data/json_value.h"

namespace nd::train {
namespace {

// IEEE half -> float, subnormals, infinities and NaN included.
float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do {
      ++e;
      mantissa <<= 1;
    } while ((mantissa & 0x400u) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mantissa & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t load_u16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t load_u32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> read_safetensors(const std::string& path) {
  MappedFile file(path);
  const unsigned char* bytes = file.bytes();
  ND_CHECK_INPUT(file.size() >= 8, path << " is not a safetensors file: " << file.size() << " bytes, no header");
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | bytes[i];
  ND_CHECK_INPUT(header_size <= static_cast<uint64_t>(file.size() - 8),
                 path << " is not a safetensors file: its header claims " << header_size << " bytes of "
                      << file.size() - 8);
  const JsonValue header =
      parse_json(std::string(reinterpret_cast<const char*>(bytes + 8), header_size), path + " (header)");
  ND_CHECK_INPUT(header.kind == JsonValue::Kind::Object, path << ": the safetensors header is no JSON object");
  const unsigned char* data = bytes + 8 + header_size;
  const uint64_t data_size = static_cast<uint64_t>(file.size()) - 8 - header_size;

  // Tensors in the order of their data, which is how writers lay them out.
  std::vector<std::pair<uint64_t, std::pair<std::string, Tensor>>> ordered;
  for (const auto& [name, entry] : header.members) {
    if (name == "__metadata__") continue;
    const std::string what = path + ": tensor " + name;
    const JsonValue* dtype = entry.find("dtype");
    const JsonValue* shape = entry.find("shape");
    const JsonValue* offsets = entry.find("data_offsets");
    ND_CHECK_INPUT(dtype && shape && offsets && shape->kind == JsonValue::Kind::Array &&
                       offsets->kind == JsonValue::Kind::Array && offsets->items.size() == 2,
                   what << " lacks dtype, shape or data_offsets [begin, end]");
    Shape dims;
    int64_t numel = 1;
    for (const JsonValue& d : shape->items) {
      dims.push_back(d.as_int(what + " shape"));
      ND_CHECK_INPUT(dims.back() >= 0, what << " has a negative dimension");
      numel *= dims.back();
    }
    const std::string& type = dtype->as_string(what + " dtype");
    const int64_t width = type == "F32" ? 4 : (type == "F16" || type == "BF16") ? 2 : 0;
    ND_CHECK_INPUT(width > 0, what << " is " << type << "; nanodist reads F32, F16 and BF16 weights");
    const int64_t begin = offsets->items[0].as_int(what + " data_offsets");
    const int64_t end = offsets->items[1].as_int(what + " data_offsets");
    ND_CHECK_INPUT(begin >= 0 && begin <= end && static_cast<uint64_t>(end) <= data_size,
                   what << " lies outside the file's data (" << begin << ".." << end << " of " << data_size << ")");
    ND_CHECK_INPUT(end - begin == numel * width, what << " holds " << end - begin << " bytes, its shape and " << type
                                                      << " need " << numel * width);
    Tensor t = Tensor::empty(dims, DType::F32, Device::cpu());
    float* out = t.data<float>();
    const unsigned char* in = data + begin;
    for (int64_t i = 0; i < numel; ++i) {
      if (type == "F32") {
        const uint32_t bits = load_u32(in + 4 * i);
        std::memcpy(out + i, &bits, sizeof(float));
      } else if (type == "BF16") {
        const uint32_t bits = static_cast<uint32_t>(load_u16(in + 2 * i)) << 16;
        std::memcpy(out + i, &bits, sizeof(float));
      } else {
        out[i] = f16_to_f32(load_u16(in + 2 * i));
      }
    }
    ordered.push_back({static_cast<uint64_t>(begin), {name, t}});
  }
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& entry : ordered) out.push_back(std::move(entry.second));
  return out;
}

}  // namespace nd::train
