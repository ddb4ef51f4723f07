// The FP8 scaling state's slices (fp8_checkpoint.h): taken from a DelayedScaling, and read back
// into one, its ring continuing where it stopped.
#include "train/ckpt/fp8_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "tensor/error.h"

namespace nd::train {

const char* const kFp8HistoryGroup = "state/fp8/amax_history";
const char* const kFp8ScalingGroup = "state/fp8/scaling";

namespace {

constexpr int kScale = 0, kCount = 1, kPosition = 2, kScalingValues = 3;

// A non-negative integer held in an f32 (exact below 2^24), or -1.
int as_index(float v) {
  return std::isfinite(v) && v >= 0.0f && v < 16777216.0f && v == std::floor(v) ? static_cast<int>(v) : -1;
}

}  // namespace

void Fp8StateSnapshot::clear() {
  values_.clear();
  slices_.clear();
}

void Fp8StateSnapshot::take(const nn::DelayedScaling& scaling) {
  clear();
  for (int i = 0; i < scaling.size(); ++i) {
    const nn::Fp8TensorScaling& t = scaling.tensor(i);
    std::vector<float> ring = t.history.oldest_first();
    ring.resize(static_cast<size_t>(t.history.length()), 0.0f);
    values_.push_back(std::move(ring));
    values_.push_back({t.scale, static_cast<float>(t.history.count()), static_cast<float>(t.history.position())});
  }
  for (int i = 0; i < scaling.size(); ++i) {
    const std::string& name = scaling.tensor(i).name;
    for (int k = 0; k < 2; ++k) {
      const std::vector<float>& v = values_[static_cast<size_t>(2 * i + k)];
      const std::vector<int64_t> shape{static_cast<int64_t>(v.size())};
      slices_.push_back(OwnedSlice{k == 0 ? kFp8HistoryGroup : kFp8ScalingGroup, name, shape, whole(shape), v.data()});
    }
  }
}

std::vector<std::string> load_fp8_state(CheckpointReader& reader, nn::DelayedScaling* scaling) {
  const std::string& path = reader.path();
  const std::vector<std::string> stored = reader.names(kFp8ScalingGroup);
  if (scaling == nullptr) {
    if (stored.empty()) return {};
    return {path + " holds the FP8 scaling state of " + std::to_string(stored.size()) +
            " tensors (amax histories, scales); this run has no --fp8 and does not use it"};
  }
  if (stored.empty())
    return {"--fp8: " + path +
            " holds no FP8 scaling state (saved without --fp8); the amax histories start afresh and the first "
            "step quantises at scale 1"};
  std::vector<std::string> missing;
  std::map<int, int> saved_lengths;  // a saved ring length -> how many tensors had it
  int restored = 0;
  for (int i = 0; i < scaling->size(); ++i) {
    nn::Fp8TensorScaling& t = scaling->tensor(i);
    if (!reader.has(kFp8ScalingGroup, t.name) || !reader.has(kFp8HistoryGroup, t.name)) {
      missing.push_back(t.name);
      continue;
    }
    const std::string what = path + ": the FP8 scaling state of " + t.name;
    ND_CHECK_INPUT(reader.full_shape(kFp8ScalingGroup, t.name) == std::vector<int64_t>{kScalingValues},
                   what << " is malformed (/" << kFp8ScalingGroup << " must hold 3 values)");
    const std::vector<int64_t> shape = reader.full_shape(kFp8HistoryGroup, t.name);
    ND_CHECK_INPUT(shape.size() == 1 && shape[0] >= 1 && shape[0] < (1 << 24),
                   what << " is malformed (its amax history must be a ring of at least one value)");
    const int length = static_cast<int>(shape[0]);
    std::vector<float> s(kScalingValues), ring(static_cast<size_t>(length));
    reader.read_box(kFp8ScalingGroup, t.name, whole({kScalingValues}), s.data());
    reader.read_box(kFp8HistoryGroup, t.name, whole(shape), ring.data());
    const int count = as_index(s[kCount]), position = as_index(s[kPosition]);
    ND_CHECK_INPUT(std::isfinite(s[kScale]) && s[kScale] > 0.0f && count >= 0 && count <= length && position >= 0 &&
                       position < length,
                   what << " is malformed (scale " << s[kScale] << ", " << s[kCount] << " amaxes, next slot "
                        << s[kPosition] << " in a ring of " << length << ")");
    ring.resize(static_cast<size_t>(count));
    for (float a : ring) ND_CHECK_INPUT(std::isfinite(a) && a >= 0.0f, what << " is malformed (an amax of " << a << ")");
    if (length == t.history.length()) {
      t.history.restore(ring, position);  // the same slots: the ring continues as it would have
    } else {
      ++saved_lengths[length];
      const size_t keep = std::min(ring.size(), static_cast<size_t>(t.history.length()));
      t.history.assign_oldest_first(std::vector<float>(ring.end() - static_cast<std::ptrdiff_t>(keep), ring.end()));
    }
    t.scale = s[kScale];  // the next step quantises as the uninterrupted run's would
    t.step_amax = 0.0f;
    ++restored;
  }
  std::vector<std::string> lines;
  if (restored > 0)
    lines.push_back("--fp8: restored the amax histories and scales of " + std::to_string(restored) +
                    " quantised tensors from " + path);
  for (const auto& [length, tensors] : saved_lengths) {
    std::ostringstream line;
    line << "--fp8: " << path << " holds amax histories of " << length << " steps, this run keeps "
         << scaling->options().history_length << ": " << (length > scaling->options().history_length ? "the newest " : "all ")
         << "amaxes that fit are kept (" << tensors << " tensors)";
    lines.push_back(line.str());
  }
  if (!missing.empty())
    lines.push_back("--fp8: " + path + " holds no FP8 scaling state for " + std::to_string(missing.size()) + " of the " +
                    std::to_string(scaling->size()) + " quantised tensors here (" + missing.front() +
                    (missing.size() > 1 ? ", ..." : "") + "); they start afresh at scale 1");
  return lines;
}

}  // namespace nd::train
