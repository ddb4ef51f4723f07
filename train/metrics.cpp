// Step lines and JSON records, in the formats of CLI.md.
#include "train/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <sstream>

#include "tensor/error.h"

namespace nd::train {

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", value);
  return buf;
}

std::string format_rate(double r) {
  char buf[32];
  if (r >= 1e9) std::snprintf(buf, sizeof(buf), "%.2fG", r / 1e9);
  else if (r >= 1e6) std::snprintf(buf, sizeof(buf), "%.2fM", r / 1e6);
  else if (r >= 1e3) std::snprintf(buf, sizeof(buf), "%.0fk", r / 1e3);
  else std::snprintf(buf, sizeof(buf), "%.0f", r);
  return buf;
}

std::string format_loss(double loss) {
  if (!std::isfinite(loss)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4f", loss);
  return buf;
}

std::string format_duration(double seconds) {
  long long s = std::llround(std::max(0.0, seconds));
  char buf[48];
  if (s < 60) std::snprintf(buf, sizeof(buf), "%llds", s);
  else if (s < 3600) std::snprintf(buf, sizeof(buf), "%lldm%02llds", s / 60, s % 60);
  else std::snprintf(buf, sizeof(buf), "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  return buf;
}

std::string format_step_line(const StepMetrics& m) {
  int width = static_cast<int>(std::to_string(m.max_iters).size());  // "step  250/5000"
  char buf[256];
  int n = std::snprintf(buf, sizeof(buf), "step %*d/%d | loss %.4f | lr %.2e | norm %.4f | %.1f ms | %s tok/s", width,
                        m.step, m.max_iters, m.loss, m.lr, m.grad_norm, m.ms, format_rate(m.tok_per_s).c_str());
  std::string line(buf, static_cast<size_t>(n));
  if (m.eta_s >= 0 && std::isfinite(m.eta_s)) line += " | ETA " + format_duration(m.eta_s);
  if (m.mfu >= 0) {
    std::snprintf(buf, sizeof(buf), " | MFU %.1f%%", 100.0 * m.mfu);
  } else {
    std::snprintf(buf, sizeof(buf), " | %.1f GFLOP/s", m.flops_per_s / 1e9);
  }
  return line + buf;
}

std::string step_json(const StepMetrics& m) {
  std::ostringstream out;
  out << "{\"step\":" << m.step << ",\"loss\":" << json_number(m.loss) << ",\"lr\":" << json_number(m.lr)
      << ",\"grad_norm\":" << json_number(m.grad_norm) << ",\"ms\":" << json_number(m.ms)
      << ",\"tok_per_s\":" << json_number(m.tok_per_s) << ",\"mfu\":" << (m.mfu >= 0 ? json_number(m.mfu) : "null")
      << ",\"flops_per_s\":" << json_number(m.flops_per_s);
  if (m.loss_scale >= 0) out << ",\"loss_scale\":" << json_number(m.loss_scale) << ",\"skipped_steps\":" << m.skipped_steps;
  out << "}";
  return out.str();
}

std::string eval_json(int step, double val_loss, double train_loss, double elapsed_s) {
  std::ostringstream out;
  out << "{\"step\":" << step << ",\"val_loss\":" << json_number(val_loss) << ",\"train_loss\":"
      << json_number(train_loss) << ",\"elapsed_s\":" << json_number(elapsed_s) << "}";
  return out.str();
}

std::string final_json(double best_val_loss, int64_t params, int64_t tokens) {
  std::ostringstream out;
  out << "{\"final\":true,\"best_val_loss\":" << json_number(best_val_loss) << ",\"params\":" << params
      << ",\"tokens\":" << tokens << "}";
  return out.str();
}

namespace {

// A process killed in the middle of a line leaves it unfinished; a resumed run cuts it off
// before appending, so every line stays one JSON object.
void drop_unfinished_last_line(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty() || text.back() == '\n') return;
  size_t keep = text.find_last_of('\n');
  std::error_code ec;
  std::filesystem::resize_file(path, keep == std::string::npos ? 0 : keep + 1, ec);
}

}  // namespace

void MetricsWriter::open(const std::string& path, bool append) {
  path_ = path;
  if (append) drop_unfinished_last_line(path);
  out_.open(path, append ? std::ios::app : std::ios::trunc);
  ND_CHECK_INPUT(out_.is_open(), "cannot write " << path << " (is the output directory writable?)");
}

void MetricsWriter::write_line(const std::string& json) {
  if (!out_.is_open()) return;
  out_ << json << '\n';
  out_.flush();
  ND_CHECK(out_.good(), "cannot write " << path_);
}

}  // namespace nd::train
