// CopyOnWrite: one atomic state per chunk. The writer moves a chunk live -> writing -> written, an
// updater live -> copying -> copied; whoever finds the other mid-way waits on one condition
// variable (rare: the two meet only at the chunk the writer is on). A written chunk moves on
// written -> hashing -> hashed when the update (or, at the end, the writer) takes its checksum.
#include "train/ckpt/copy_on_write.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "tensor/error.h"
#include "train/ckpt/checksum.h"

namespace nd::train {

static_assert(CopyOnWrite::kChunkFloats * sizeof(float) == kChecksumChunkBytes,
              "a copy-on-write chunk is a checksum chunk: the update takes its checksum whole");

namespace {

std::atomic<int> g_write_delay_us{0};
std::atomic<int64_t> g_chunks_copied{0};

}  // namespace

void set_write_delay_for_testing(int microseconds) { g_write_delay_us = microseconds; }
int64_t chunks_copied_for_testing() { return g_chunks_copied.load(); }

void CopyOnWrite::arm(std::vector<Region> regions) {
  ND_CHECK(!armed(), "CopyOnWrite::arm: the snapshot before is still armed");
  checksum_wait_seconds_ = 0.0;
  regions_ = std::move(regions);
  first_.assign(regions_.size(), 0);
  int64_t total = 0;
  for (size_t r = 0; r < regions_.size(); ++r) {
    first_[r] = total;
    total += chunks(r);
  }
  states_.reset(new std::atomic<uint8_t>[static_cast<size_t>(std::max<int64_t>(total, 1))]);
  for (int64_t c = 0; c < total; ++c) states_[c].store(kLive, std::memory_order_relaxed);
  by_address_.resize(regions_.size());
  for (size_t r = 0; r < regions_.size(); ++r) by_address_[r] = r;
  std::sort(by_address_.begin(), by_address_.end(),
            [this](size_t a, size_t b) { return regions_[a].live < regions_[b].live; });
  for (size_t k = 1; k < by_address_.size(); ++k) {
    const Region& before = regions_[by_address_[k - 1]];
    ND_CHECK(before.live + before.count <= regions_[by_address_[k]].live, "CopyOnWrite::arm: regions overlap");
  }
  sums_.reset(new uint64_t[static_cast<size_t>(std::max<int64_t>(total, 1))]);
  copied_ = 0;
  hashed_ = 0;
  finish_ = false;
  armed_.store(true, std::memory_order_release);
}

void CopyOnWrite::disarm() { armed_.store(false, std::memory_order_release); }

int64_t CopyOnWrite::chunks(size_t region) const {
  return (regions_.at(region).count + kChunkFloats - 1) / kChunkFloats;
}

const float* CopyOnWrite::acquire(size_t region, int64_t chunk) {
  if (const int us = g_write_delay_us.load()) std::this_thread::sleep_for(std::chrono::microseconds(us));
  std::atomic<uint8_t>& s = state(region, chunk);
  while (true) {
    uint8_t now = s.load(std::memory_order_acquire);
    if (now == kLive && s.compare_exchange_strong(now, kWriting, std::memory_order_acq_rel))
      return regions_[region].live + chunk * kChunkFloats;
    if (now == kCopied) return regions_[region].side + chunk * kChunkFloats;
    ND_CHECK(now == kCopying || now == kLive, "CopyOnWrite::acquire: chunk " << chunk << " taken twice");
    if (now == kCopying) wait_while(region, chunk, kCopying);
  }
}

void CopyOnWrite::release(size_t region, int64_t chunk) {
  std::atomic<uint8_t>& s = state(region, chunk);
  uint8_t writing = kWriting;
  if (s.compare_exchange_strong(writing, kWritten, std::memory_order_acq_rel)) changed();
}

void CopyOnWrite::release_hashed(size_t region, int64_t chunk, uint64_t checksum) {
  std::atomic<uint8_t>& s = state(region, chunk);
  sums_[first_[region] + chunk] = checksum;
  uint8_t writing = kWriting;
  if (s.compare_exchange_strong(writing, kHashed, std::memory_order_acq_rel)) {
    hashed_.fetch_add(1);
    changed();
  }
}

int64_t CopyOnWrite::chunk_floats(size_t region, int64_t chunk) const {
  return std::min(kChunkFloats, regions_[region].count - chunk * kChunkFloats);
}

bool CopyOnWrite::hash_written(size_t region, int64_t chunk) {
  std::atomic<uint8_t>& s = state(region, chunk);
  uint8_t written = kWritten;
  if (!s.compare_exchange_strong(written, kHashing, std::memory_order_acq_rel)) return false;
  sums_[first_[region] + chunk] = checksum64(chunk_begin(regions_[region].live, chunk),
                                             static_cast<size_t>(chunk_floats(region, chunk)) * sizeof(float));
  s.store(kHashed, std::memory_order_release);
  hashed_.fetch_add(1);
  changed();
  return true;
}

void CopyOnWrite::wait_for_checksums() {
  const int64_t total = total_chunks();
  const auto began = std::chrono::steady_clock::now();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return hashed_.load() == total || finish_.load(); });
  }
  checksum_wait_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  // Whatever the update did not take (it did not come, or did not touch every chunk).
  for (size_t r = 0; r < regions_.size(); ++r)
    for (int64_t c = 0; c < chunks(r); ++c)
      while (true) {
        const uint8_t now = state(r, c).load(std::memory_order_acquire);
        if (now == kCopied || now == kHashed) break;
        ND_CHECK(now == kWritten || now == kHashing, "CopyOnWrite::wait_for_checksums: chunk " << c << " not written");
        if (now == kHashing) wait_while(r, c, kHashing);
        else hash_written(r, c);
      }
}

void CopyOnWrite::finish_checksums() {
  finish_ = true;
  changed();
}

template <typename F>
void CopyOnWrite::for_each_chunk(const float* data, int64_t n, F&& f) {
  const float* end = data + n;
  // The last region starting at or below `data`, then every region that starts before `end`.
  auto it = std::upper_bound(by_address_.begin(), by_address_.end(), data,
                             [this](const float* p, size_t r) { return p < regions_[r].live; });
  if (it != by_address_.begin()) --it;
  for (; it != by_address_.end() && regions_[*it].live < end; ++it) {
    const Region& region = regions_[*it];
    const float* lo = std::max(data, region.live);
    const float* hi = std::min(end, region.live + region.count);
    if (lo >= hi) continue;
    for (int64_t c = (lo - region.live) / kChunkFloats; c <= (hi - 1 - region.live) / kChunkFloats; ++c) f(*it, c);
  }
}

void CopyOnWrite::before_update(const float* data, int64_t n) {
  if (!armed() || n <= 0) return;
  for_each_chunk(data, n, [this](size_t region, int64_t chunk) { protect(region, chunk); });
}

int64_t CopyOnWrite::before_update_hashed_by_caller(const float* data, int64_t n) {
  if (!armed() || n <= 0) return -1;
  size_t region = 0;
  int64_t chunk = -1, count = 0;
  for_each_chunk(data, n, [&](size_t r, int64_t c) {
    region = r;
    chunk = c;
    ++count;
  });
  if (count != 1 || chunk_begin(regions_[region].live, chunk) != data || chunk_floats(region, chunk) != n) {
    before_update(data, n);
    return -1;
  }
  std::atomic<uint8_t>& s = state(region, chunk);
  while (true) {
    uint8_t written = kWritten;
    if (s.compare_exchange_strong(written, kHashing, std::memory_order_acq_rel)) return first_[region] + chunk;
    if (written == kLive) {  // not on disk yet: copied (and hashed from the copy) as before_update does
      protect(region, chunk);
      return -1;
    }
    if (written == kHashed || written == kCopied) return -1;
    wait_while(region, chunk, static_cast<State>(written));
  }
}

void CopyOnWrite::hashed_by_update(int64_t token, uint64_t checksum) {
  sums_[token] = checksum;
  states_[token].store(kHashed, std::memory_order_release);
  hashed_.fetch_add(1);
  changed();
}

int64_t CopyOnWrite::writer_position(const float* data, int64_t n) {
  int64_t first = -1;
  if (!armed() || n <= 0) return first;
  for_each_chunk(data, n, [&](size_t region, int64_t chunk) {
    const uint8_t now = state(region, chunk).load(std::memory_order_acquire);
    const int64_t position = first_[region] + chunk;
    if ((now == kLive || now == kWriting) && (first < 0 || position < first)) first = position;
  });
  return first;
}

void CopyOnWrite::protect(size_t region, int64_t chunk) {
  std::atomic<uint8_t>& s = state(region, chunk);
  while (true) {
    uint8_t now = s.load(std::memory_order_acquire);
    if (now == kHashed || now == kCopied) return;
    if (now == kWritten) {  // on disk: its checksum now, before the bytes change (then read from cache)
      if (hash_written(region, chunk)) return;
      continue;
    }
    if (now == kLive && s.compare_exchange_strong(now, kCopying, std::memory_order_acq_rel)) {
      const Region& r = regions_[region];
      ND_CHECK(r.side != nullptr, "CopyOnWrite: an update of a region without a side buffer");
      const int64_t begin = chunk * kChunkFloats, count = chunk_floats(region, chunk);
      std::memcpy(r.side + begin, r.live + begin, static_cast<size_t>(count) * sizeof(float));
      sums_[first_[region] + chunk] = checksum64(r.side + begin, static_cast<size_t>(count) * sizeof(float));
      s.store(kCopied, std::memory_order_release);
      copied_.fetch_add(1, std::memory_order_relaxed);
      g_chunks_copied.fetch_add(1, std::memory_order_relaxed);
      hashed_.fetch_add(1);
      changed();
      return;
    }
    if (now == kWriting || now == kCopying || now == kHashing) wait_while(region, chunk, static_cast<State>(now));
  }
}

void CopyOnWrite::wait_while(size_t region, int64_t chunk, State busy) {
  std::atomic<uint8_t>& s = state(region, chunk);
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return s.load(std::memory_order_acquire) != busy; });
}

void CopyOnWrite::changed() {
  // Taking the mutex orders this change before a waiter's check or after its wait began.
  { std::lock_guard<std::mutex> lock(mutex_); }
  cv_.notify_all();
}

}  // namespace nd::train
