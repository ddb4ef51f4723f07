// The safetensors reader (safetensors.h), over a read-only mapping of the file.
#include "train/ckpt/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "data/mapped_file.h"
#include "data/json_value.h"
#include "tensor/checked_size.h"
#include "tensor/error.h"

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

// The header of the mapped `file`; `data` receives where the tensor bytes start.
std::vector<SafetensorsEntry> parse_header(const MappedFile& file, const std::string& path,
                                           const unsigned char** data) {
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
  *data = bytes + 8 + header_size;
  const int64_t data_size = file.size() - 8 - static_cast<int64_t>(header_size);

  std::vector<SafetensorsEntry> entries;
  for (const auto& [name, entry] : header.members) {
    if (name == "__metadata__") continue;
    const std::string what = path + ": tensor " + name;
    const JsonValue* dtype = entry.find("dtype");
    const JsonValue* shape = entry.find("shape");
    const JsonValue* offsets = entry.find("data_offsets");
    ND_CHECK_INPUT(dtype && shape && offsets && shape->kind == JsonValue::Kind::Array &&
                       offsets->kind == JsonValue::Kind::Array && offsets->items.size() == 2,
                   what << " lacks dtype, shape or data_offsets [begin, end]");
    SafetensorsEntry e;
    e.name = name;
    for (const JsonValue& d : shape->items) {
      e.shape.push_back(d.as_int(what + " shape"));
      ND_CHECK_INPUT(e.shape.back() >= 0, what << " has a negative dimension");
    }
    e.dtype = dtype->as_string(what + " dtype");
    const int64_t width = e.dtype == "F32" ? 4 : (e.dtype == "F16" || e.dtype == "BF16") ? 2 : 0;
    ND_CHECK_INPUT(width > 0, what << " is " << e.dtype << "; nanodist reads F32, F16 and BF16 weights");
    e.begin = offsets->items[0].as_int(what + " data_offsets");
    e.end = offsets->items[1].as_int(what + " data_offsets");
    ND_CHECK_INPUT(e.begin >= 0 && e.begin <= e.end && e.end <= data_size,
                   what << " lies outside the file's data (" << e.begin << ".." << e.end << " of " << data_size << ")");
    const int64_t need = checked_mul(checked_numel(e.shape, what + " shape"), width, what + " size in bytes");
    ND_CHECK_INPUT(e.end - e.begin == need,
                   what << " holds " << e.end - e.begin << " bytes, its shape and " << e.dtype << " need " << need);
    entries.push_back(std::move(e));
  }
  // The order of their data, which is how writers lay them out.
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
  return entries;
}

}  // namespace

std::vector<SafetensorsEntry> read_safetensors_header(const std::string& path) {
  MappedFile file(path);
  const unsigned char* data = nullptr;
  return parse_header(file, path, &data);
}

std::vector<std::pair<std::string, Tensor>> read_safetensors(const std::string& path) {
  MappedFile file(path);
  const unsigned char* data = nullptr;
  std::vector<std::pair<std::string, Tensor>> out;
  for (const SafetensorsEntry& e : parse_header(file, path, &data)) {
    Tensor t = Tensor::empty(e.shape, DType::F32, Device::cpu());
    float* values = t.data<float>();
    const unsigned char* in = data + e.begin;
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (e.dtype == "F32") {
        const uint32_t bits = load_u32(in + 4 * i);
        std::memcpy(values + i, &bits, sizeof(float));
      } else if (e.dtype == "BF16") {
        const uint32_t bits = static_cast<uint32_t>(load_u16(in + 2 * i)) << 16;
        std::memcpy(values + i, &bits, sizeof(float));
      } else {
        values[i] = f16_to_f32(load_u16(in + 2 * i));
      }
    }
    out.emplace_back(e.name, t);
  }
  return out;
}

}  // namespace nd::train
