// The alpha-beta fit (comm_model.h): closed-form weighted least squares, the table's CSV.
#include "dist/comm/bench/comm_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tensor/error.h"

namespace nd::dist {

namespace {

BenchOp op_of(const std::string& name) { return parse_bench_op(name); }

}  // namespace

int collective_steps(BenchOp op, int nranks) {
  const int n = std::max(nranks, 2);
  switch (op) {
    case BenchOp::AllReduce: return 2 * (n - 1);
    case BenchOp::ReduceScatter:
    case BenchOp::AllGather:
    case BenchOp::Broadcast:
    case BenchOp::AllToAll: return n - 1;
    case BenchOp::SendRecv: return 1;
  }
  return 1;
}

double AlphaBetaFit::predict_us(int64_t bytes, int ranks) const {
  if (ranks <= 1) return 0.0;
  if (ranks == nranks) return alpha_us + beta_us_per_byte * static_cast<double>(bytes);
  const BenchOp kind = op_of(op);
  const double alpha_step = alpha_us / collective_steps(kind, nranks);
  const double beta_bus = beta_us_per_byte / bus_factor(kind, nranks);
  return alpha_step * collective_steps(kind, ranks) + beta_bus * bus_factor(kind, ranks) * static_cast<double>(bytes);
}

AlphaBetaFit fit_alpha_beta(const std::vector<int64_t>& bytes, const std::vector<double>& time_us) {
  ND_CHECK(bytes.size() == time_us.size(), "fit: " << bytes.size() << " sizes but " << time_us.size() << " times");
  // Minimise sum w (a + b x - t)^2 with w = 1 / t^2: the 2 x 2 normal equations.
  double sw = 0, sx = 0, sxx = 0, st = 0, sxt = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    ND_CHECK(time_us[i] > 0, "fit: time " << time_us[i] << " us at " << bytes[i] << " bytes is not positive");
    const double w = 1.0 / (time_us[i] * time_us[i]), x = static_cast<double>(bytes[i]), t = time_us[i];
    sw += w;
    sx += w * x;
    sxx += w * x * x;
    st += w * t;
    sxt += w * x * t;
  }
  const double det = sw * sxx - sx * sx;
  ND_CHECK(bytes.size() >= 2 && det > 1e-12 * sw * sxx, "fit: needs at least two distinct sizes");
  AlphaBetaFit fit;
  fit.beta_us_per_byte = (sw * sxt - sx * st) / det;
  fit.alpha_us = (st - fit.beta_us_per_byte * sx) / sw;
  // A negative term means the curve is not alpha-beta shaped there; keep the model physical.
  if (fit.beta_us_per_byte < 0) {
    fit.beta_us_per_byte = 0;
    fit.alpha_us = st / sw;
  } else if (fit.alpha_us < 0) {
    fit.alpha_us = 0;
    fit.beta_us_per_byte = sxt / sxx;
  }
  double squares = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const double model = fit.alpha_us + fit.beta_us_per_byte * static_cast<double>(bytes[i]);
    const double rel = std::fabs(model - time_us[i]) / time_us[i];
    squares += rel * rel;
    fit.max_rel_err = std::max(fit.max_rel_err, rel);
  }
  fit.points = static_cast<int>(bytes.size());
  fit.rms_rel_err = std::sqrt(squares / fit.points);
  return fit;
}

SweepPoints sweep_points(const std::vector<BenchCommRow>& rows) {
  SweepPoints points;
  for (const BenchCommRow& row : rows) {
    points.bytes.push_back(row.bytes);
    points.time_us.push_back(row.time_us);
  }
  return points;
}

AlphaBetaFit fit_rows(const std::vector<BenchCommRow>& rows) {
  const SweepPoints points = sweep_points(rows);
  return fit_alpha_beta(points.bytes, points.time_us);
}

// Tables written before piecewise fits have the first 8 fields; those rows time every size.
std::string fit_csv_header() {
  return "op,impl,nranks,alpha_us,beta_us_per_byte,rms_rel_err,max_rel_err,points,min_bytes,max_bytes";
}

std::string format_fit_csv(const AlphaBetaFit& fit) {
  char line[512];
  std::snprintf(line, sizeof line, "%s,%s,%d,%.4f,%.6e,%.4f,%.4f,%d,%lld,%lld", fit.op.c_str(), fit.impl.c_str(),
                fit.nranks, fit.alpha_us, fit.beta_us_per_byte, fit.rms_rel_err, fit.max_rel_err, fit.points,
                static_cast<long long>(fit.min_bytes), static_cast<long long>(fit.max_bytes));
  return line;
}

std::vector<AlphaBetaFit> parse_fit_table(const std::string& text, const std::string& what) {
  std::istringstream in(text);
  std::string line;
  std::vector<AlphaBetaFit> table;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("op,", 0) == 0) continue;  // the header (also where tables were concatenated)
    std::vector<std::string> fields;
    std::stringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) fields.push_back(cell);
    ND_CHECK_INPUT(fields.size() == 8 || fields.size() == 10,
                   what << " line " << number << ": expected 10 fields (" << fit_csv_header() << "; 8 in older tables), got "
                        << fields.size());
    AlphaBetaFit fit;
    fit.op = fields[0];
    fit.impl = fields[1];
    try {
      size_t used = 0;
      fit.nranks = std::stoi(fields[2], &used);
      fit.alpha_us = std::stod(fields[3]);
      fit.beta_us_per_byte = std::stod(fields[4]);
      fit.rms_rel_err = std::stod(fields[5]);
      fit.max_rel_err = std::stod(fields[6]);
      fit.points = std::stoi(fields[7]);
      if (fields.size() == 10) {
        fit.min_bytes = std::stoll(fields[8]);
        fit.max_bytes = std::stoll(fields[9]);
      }
    } catch (const std::exception&) {
      ND_FAIL_INPUT(what << " line " << number << ": a number does not parse: " << line);
    }
    (void)op_of(fit.op);  // an unknown op is an input error naming it
    ND_CHECK_INPUT(fit.nranks >= 2 && fit.alpha_us >= 0 && fit.beta_us_per_byte >= 0,
                   what << " line " << number << ": needs nranks >= 2 and alpha, beta >= 0: " << line);
    ND_CHECK_INPUT(fit.min_bytes >= 0 && fit.max_bytes >= fit.min_bytes,
                   what << " line " << number << ": needs 0 <= min_bytes <= max_bytes: " << line);
    table.push_back(fit);
  }
  return table;
}

std::vector<AlphaBetaFit> read_fit_table(const std::string& path) {
  std::ifstream file(path);
  ND_CHECK_INPUT(file.good(), "cannot read the fit table " << path);
  std::stringstream text;
  text << file.rdbuf();
  return parse_fit_table(text.str(), path);
}

const AlphaBetaFit* find_fit(const std::vector<AlphaBetaFit>& table, const std::string& op, const std::string& impl,
                             int nranks) {
  const AlphaBetaFit* best = nullptr;
  for (const AlphaBetaFit& fit : table) {
    if (fit.op != op || fit.impl != impl) continue;
    if (!best || std::abs(fit.nranks - nranks) < std::abs(best->nranks - nranks)) best = &fit;
  }
  return best;
}

CollectiveModel find_model(const std::vector<AlphaBetaFit>& table, const std::string& op, const std::string& impl,
                           int nranks) {
  CollectiveModel model;
  const AlphaBetaFit* nearest = find_fit(table, op, impl, nranks);
  if (!nearest) return model;
  for (const AlphaBetaFit& fit : table)
    if (fit.op == op && fit.impl == impl && fit.nranks == nearest->nranks) model.pieces.push_back(fit);
  std::stable_sort(model.pieces.begin(), model.pieces.end(),
                   [](const AlphaBetaFit& a, const AlphaBetaFit& b) { return a.min_bytes < b.min_bytes; });
  return model;
}

}  // namespace nd::dist
