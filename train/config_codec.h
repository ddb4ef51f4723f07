// How each type of TrainConfig member reads its flag's text and writes it back: Codec<T> gives the
// flag type (for --help and the /config attributes), parse (an input error naming `origin` or the
// flag) and text, the spelling a checkpoint or run.conf records. Only config.cpp includes it.
#pragma once
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>

#include "tensor/error.h"
#include "train/config.h"

namespace nd::train::config_codec {

// The shortest text that reads back as exactly `v` (help shows 0.001, checkpoints lose nothing).
inline std::string shortest_text(double v) {
  for (int precision = 6;; ++precision) {
    std::ostringstream out;
    out.precision(precision);
    out << v;
    if (precision >= 17 || std::stod(out.str()) == v) return out.str();
  }
}

// Codec<T>: the flag type of a T member, its parse from text (an input error naming `origin` or
// the flag) and its text.
template <typename T>
struct Codec;

template <>
struct Codec<int> {
  static constexpr FlagType type = FlagType::Int;
  static int parse(const std::string& text, const std::string& origin) {
    int64_t v = parse_int_value(text, origin);
    ND_CHECK_INPUT(v >= INT32_MIN && v <= INT32_MAX, "value " << v << " of " << origin << " is out of range");
    return static_cast<int>(v);
  }
  static std::string text(int v) { return std::to_string(v); }
};

template <>
struct Codec<uint64_t> {
  static constexpr FlagType type = FlagType::Int;
  static uint64_t parse(const std::string& text, const std::string& origin) {
    int64_t v = parse_int_value(text, origin);
    ND_CHECK_INPUT(v >= 0, origin << " must be >= 0, got " << v);
    return static_cast<uint64_t>(v);
  }
  static std::string text(uint64_t v) { return std::to_string(v); }
};

template <>
struct Codec<double> {
  static constexpr FlagType type = FlagType::Float;
  static double parse(const std::string& text, const std::string& origin) { return parse_double_value(text, origin); }
  static std::string text(double v) { return shortest_text(v); }
};

template <>
struct Codec<bool> {
  static constexpr FlagType type = FlagType::Bool;
  static bool parse(const std::string& text, const std::string& origin) { return parse_bool_value(text, origin); }
  static std::string text(bool v) { return v ? "true" : "false"; }
};

template <>
struct Codec<std::string> {
  static constexpr FlagType type = FlagType::String;
  static std::string parse(const std::string& text, const std::string&) { return text; }
  static std::string text(const std::string& v) { return v; }
};

// The choices: text on the command line, an enum (or a Device, a DType) everywhere else.
template <typename T, T (*Parse)(const std::string&), std::string (*Text)(const T&)>
struct ChoiceCodec {
  static constexpr FlagType type = FlagType::String;
  static T parse(const std::string& text, const std::string&) { return Parse(text); }
  static std::string text(const T& v) { return Text(v); }
};

inline std::string device_text(const Device& d) { return d.str(); }
inline std::string dtype_text(const DType& t) { return dtype_flag_name(t); }
inline DType parse_dtype_flag(const std::string& text) { return parse_dtype(text); }
inline std::string grad_dtype_text(const std::optional<DType>& t) { return t ? dtype_name(*t) : ""; }
// --loss-scale: "auto" = none.
inline std::optional<LossScalerOptions> parse_loss_scale_flag(const std::string& text) {
  if (text == "auto") return std::nullopt;
  return parse_loss_scale(text);
}
inline std::string loss_scale_text(const std::optional<LossScalerOptions>& o) {
  if (!o) return "auto";
  return o->dynamic ? "dynamic" : shortest_text(o->initial_scale);
}
inline std::string pipeline_kind_text(const PipelineKind& k) { return pipeline_kind_name(k); }
inline std::string collectives_text(const dist::Algorithm& c) { return dist::algorithm_name(c); }
inline std::string attention_text(const AttentionBackend& a) { return attention_backend_name(a); }
inline std::string recompute_text(const nn::Recompute& r) { return recompute_name(r); }
inline std::string async_save_text(const AsyncSave& a) { return async_save_name(a); }
inline std::string fp8_text(const Fp8Layers& l) { return fp8_layers_text(l); }
inline std::string lr_shape_text(const LrShape& s) { return lr_shape_name(s); }

template <>
struct Codec<Device> : ChoiceCodec<Device, parse_device, device_text> {};
template <>
struct Codec<DType> : ChoiceCodec<DType, parse_dtype_flag, dtype_text> {};
template <>
struct Codec<std::optional<DType>> : ChoiceCodec<std::optional<DType>, parse_grad_dtype, grad_dtype_text> {};
template <>
struct Codec<std::optional<LossScalerOptions>>
    : ChoiceCodec<std::optional<LossScalerOptions>, parse_loss_scale_flag, loss_scale_text> {};
template <>
struct Codec<PipelineKind> : ChoiceCodec<PipelineKind, parse_pipeline_kind, pipeline_kind_text> {};
template <>
struct Codec<dist::Algorithm> : ChoiceCodec<dist::Algorithm, parse_collectives_flag, collectives_text> {};
template <>
struct Codec<AttentionBackend> : ChoiceCodec<AttentionBackend, parse_attention_backend, attention_text> {};
template <>
struct Codec<nn::Recompute> : ChoiceCodec<nn::Recompute, parse_recompute, recompute_text> {};
template <>
struct Codec<AsyncSave> : ChoiceCodec<AsyncSave, parse_async_save, async_save_text> {};
template <>
struct Codec<Fp8Layers> : ChoiceCodec<Fp8Layers, parse_fp8_layers, fp8_text> {};
template <>
struct Codec<LrShape> : ChoiceCodec<LrShape, parse_lr_shape, lr_shape_text> {};

}  // namespace nd::train::config_codec
