// Heartbeat over UDP: one datagram (job key, rank, kind) per peer per interval. UDP needs no
// connection set-up, so a peer that is gone costs nothing but silence, and a lost datagram is
// made up by the next one (a peer must miss timeout/interval beats in a row to be declared gone).
#include "dist/comm/heartbeat.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>

#include "tensor/error.h"

namespace nd::dist {
namespace {

constexpr uint32_t kBeat = 1;
constexpr uint32_t kGoodbye = 2;

struct Datagram {
  uint64_t job_key;
  uint32_t rank;
  uint32_t kind;
};

bool is_loopback(uint32_t ipv4_network_order) { return (ntohl(ipv4_network_order) >> 24) == 127; }

// An IPv4 address other hosts can reach this one at: the host name's own address when it is not
// a loopback one, else the first interface that is up and not a loopback; 0 when there is none
// (then only ranks on this host can be reached, over the loopback).
uint32_t reachable_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  uint32_t address = 0;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) == 0) {
    for (addrinfo* a = found; a && address == 0; a = a->ai_next) {
      uint32_t ip = reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr.s_addr;
      if (!is_loopback(ip)) address = ip;
    }
    ::freeaddrinfo(found);
  }
  if (address != 0) return address;
  ifaddrs* interfaces = nullptr;
  if (::getifaddrs(&interfaces) != 0) return 0;
  for (ifaddrs* i = interfaces; i && address == 0; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
    uint32_t ip = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    if (!is_loopback(ip)) address = ip;
  }
  ::freeifaddrs(interfaces);
  return address;
}

std::string host_name() {
  char name[256] = {0};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

}  // namespace

Heartbeat::Heartbeat(Comm& comm, const HeartbeatOptions& options) : rank_(comm.rank()), options_(options) {
  ND_CHECK(options_.timeout_s > 0, "heartbeat timeout must be > 0, got " << options_.timeout_s);
  options_.interval_s = std::min(options_.interval_s, options_.timeout_s / 4.0);
  socket_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ND_CHECK(socket_ >= 0, "cannot open the heartbeat socket: " << std::strerror(errno));
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  any.sin_port = 0;
  socklen_t length = sizeof(any);
  ND_CHECK(::bind(socket_, reinterpret_cast<sockaddr*>(&any), sizeof(any)) == 0 &&
               ::getsockname(socket_, reinterpret_cast<sockaddr*>(&any), &length) == 0,
           "cannot bind the heartbeat socket: " << std::strerror(errno));

  // Every rank's (host, address, port) and rank 0's job key, gathered by a sum over zeros.
  const int n = comm.size();
  const std::string host = host_name();
  std::vector<int64_t> table(3 * static_cast<size_t>(n) + 1, 0);
  table[3 * rank_] = static_cast<int64_t>(std::hash<std::string>{}(host) >> 1);
  table[3 * rank_ + 1] = static_cast<int64_t>(reachable_ipv4(host));
  table[3 * rank_ + 2] = static_cast<int64_t>(any.sin_port);
  if (rank_ == 0) table[3 * n] = static_cast<int64_t>(std::random_device{}() | 1u);
  comm.host_allreduce(table.data(), static_cast<int>(table.size()), HostReduce::Sum);
  job_key_ = static_cast<uint64_t>(table[3 * n]);

  started_ = Clock::now();
  peers_.resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    Peer& p = peers_[static_cast<size_t>(r)];
    const bool same_host = table[3 * r] == table[3 * rank_];
    p.ipv4 = same_host ? htonl(INADDR_LOOPBACK) : static_cast<uint32_t>(table[3 * r + 1]);
    p.port = static_cast<uint16_t>(table[3 * r + 2]);
    p.last_heard = started_;
    ND_CHECK(same_host || p.ipv4 != 0, "heartbeat: rank " << r << " on another host has no reachable IPv4 address");
  }
  thread_ = std::thread([this] { run(); });
}

Heartbeat::~Heartbeat() { stop(); }

void Heartbeat::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  if (socket_ >= 0) ::close(socket_);
  socket_ = -1;
}

void Heartbeat::finish() {
  if (socket_ < 0) return;
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  send_all(kGoodbye);
  stop();
}

void Heartbeat::send_all(uint32_t kind) {
  Datagram d{job_key_, static_cast<uint32_t>(rank_), kind};
  std::vector<std::pair<uint32_t, uint16_t>> targets;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t r = 0; r < peers_.size(); ++r)
      if (static_cast<int>(r) != rank_ && !peers_[r].left) targets.emplace_back(peers_[r].ipv4, peers_[r].port);
  }
  for (const auto& [ip, port] : targets) {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = ip;
    to.sin_port = port;
    // A failed send is not an error here: a peer that is gone shows up as silence.
    ::sendto(socket_, &d, sizeof(d), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&to), sizeof(to));
  }
}

void Heartbeat::receive_pending() {
  Datagram d;
  for (;;) {
    ssize_t got = ::recv(socket_, &d, sizeof(d), MSG_DONTWAIT);
    if (got < 0) return;
    if (got != static_cast<ssize_t>(sizeof(d)) || d.job_key != job_key_ || d.rank >= peers_.size()) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    Peer& p = peers_[d.rank];
    p.last_heard = Clock::now();
    if (d.kind == kGoodbye) p.left = true;
  }
}

void Heartbeat::run() {
  const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.interval_s));
  Clock::time_point next_beat = Clock::now();
  while (!stopping_) {
    Clock::time_point now = Clock::now();
    if (now >= next_beat) {
      send_all(kBeat);
      next_beat = now + interval;
    }
    // Wake for the next beat, for a datagram, or at least every 100 ms to notice stop().
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_beat - Clock::now()).count();
    pollfd fd{socket_, POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(std::clamp<int64_t>(wait, 1, 100))) > 0) receive_pending();
  }
}

std::string Heartbeat::silent_peer() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Clock::time_point now = Clock::now();
  for (size_t r = 0; r < peers_.size(); ++r) {
    if (static_cast<int>(r) == rank_ || peers_[r].left) continue;
    double silent = std::chrono::duration<double>(now - peers_[r].last_heard).count();
    if (silent > options_.timeout_s) {
      char line[256];
      std::snprintf(line, sizeof(line),
                    "rank %zu has sent no heartbeat for %.1f s (its process is frozen or killed, or its node is "
                    "gone; --heartbeat-timeout %.0f)",
                    r, silent, options_.timeout_s);
      return line;
    }
  }
  return "";
}

}  // namespace nd::dist
