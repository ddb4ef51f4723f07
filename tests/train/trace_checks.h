// Shared checks of the --trace tests: read a Chrome trace, check that the events of each track
// (pid, tid) nest, count the comm events by kind; and a communicator double that counts the
// collectives issued while a trace records, splits included (independent of TracingComm).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "data/json_value.h"
#include "dist/comm/forwarding_comm.h"
#include "tensor/op_trace.h"

namespace nd::train::testing {

struct TraceEventRecord {
  std::string name, cat;
  int pid = 0, tid = 0;
  double ts = 0, dur = 0;
};

inline std::vector<TraceEventRecord> read_chrome_trace(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  JsonValue doc = parse_json(text.str(), path);  // throws on invalid JSON
  std::vector<TraceEventRecord> out;
  const JsonValue* events = doc.find("traceEvents");
  EXPECT_NE(events, nullptr);
  if (!events) return out;
  for (const JsonValue& e : events->items) {
    if (e.find("ph")->as_string("ph") != "X") continue;
    out.push_back({e.find("name")->as_string("name"), e.find("cat")->as_string("cat"),
                   static_cast<int>(e.find("pid")->as_int("pid")), static_cast<int>(e.find("tid")->as_int("tid")),
                   e.find("ts")->as_double("ts"), e.find("dur")->as_double("dur")});
  }
  return out;
}

// Every event of a track lies inside the enclosing one or after it (microseconds, 1e-3 slack).
inline void expect_nested_per_track(std::vector<TraceEventRecord> events) {
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return std::tie(a.pid, a.tid, a.ts) < std::tie(b.pid, b.tid, b.ts) ||
           (std::tie(a.pid, a.tid, a.ts) == std::tie(b.pid, b.tid, b.ts) && a.dur > b.dur);
  });
  std::vector<const TraceEventRecord*> open;
  for (const TraceEventRecord& e : events) {
    while (!open.empty() && (open.back()->pid != e.pid || open.back()->tid != e.tid ||
                             open.back()->ts + open.back()->dur <= e.ts + 1e-3))
      open.pop_back();
    if (!open.empty()) {
      EXPECT_LE(e.ts + e.dur, open.back()->ts + open.back()->dur + 1e-3)
          << e.name << " overlaps " << open.back()->name << " on pid " << e.pid << " tid " << e.tid;
    }
    open.push_back(&e);
  }
}

// "allreduce 0.01 MB" -> "allreduce"
inline std::map<std::string, int> comm_kinds(const std::vector<TraceEventRecord>& events, int pid) {
  std::map<std::string, int> kinds;
  for (const TraceEventRecord& e : events)
    if (e.pid == pid && e.cat == "comm") kinds[e.name.substr(0, e.name.find(' '))] += 1;
  return kinds;
}

class CountingComm : public dist::ForwardingComm {
 public:
  using Counts = std::map<std::string, int>;
  CountingComm(dist::Comm& inner, std::shared_ptr<Counts> counts) : ForwardingComm(inner), counts_(std::move(counts)) {}
  CountingComm(std::unique_ptr<dist::Comm> inner, std::shared_ptr<Counts> counts)
      : ForwardingComm(std::move(inner)), counts_(std::move(counts)) {}

  dist::CommWork allreduce_async(Tensor& b, dist::ReduceOp op) override {
    count("allreduce");
    return inner_.allreduce_async(b, op);
  }
  dist::CommWork reduce_scatter_async(const Tensor& i, Tensor& o, dist::ReduceOp op) override {
    count("reduce_scatter");
    return inner_.reduce_scatter_async(i, o, op);
  }
  dist::CommWork all_gather_async(const Tensor& i, Tensor& o) override {
    count("all_gather");
    return inner_.all_gather_async(i, o);
  }
  dist::CommWork broadcast_async(Tensor& b, int root) override {
    count("broadcast");
    return inner_.broadcast_async(b, root);
  }
  std::unique_ptr<dist::Comm> split(int color, int key) override {
    return std::make_unique<CountingComm>(inner_.split(color, key), counts_);
  }

 private:
  void count(const char* kind) {
    if (op_timer::tracing()) (*counts_)[kind] += 1;
  }
  std::shared_ptr<Counts> counts_;
};

}  // namespace nd::train::testing
