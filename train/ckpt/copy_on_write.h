// A consistent snapshot of host memory without copying it up front (an asynchronous checkpoint
// save on the CPU). The writer reads each chunk straight from the live buffer; whoever is about to
// overwrite a range (the optimizer's update) first calls before_update, which copies the chunks
// the writer has not taken yet into a side buffer, or waits for the one it is writing. Either way
// the writer sees every byte as it was when arm() was called, and the update copies only what
// the disk has not taken yet. The update also takes the chunks' checksums (checksum.h), as it
// reads every old byte anyway: of a chunk it copies, from the copy; of one the writer has written,
// just before changing it, or on its own pass (before_update_hashed_by_caller). The writer hashes
// only regions nobody updates (no side buffer).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace nd::train {

class CopyOnWrite {
 public:
  // 1 MiB of floats: a multiple of the page, so every chunk but a region's last is written by
  // direct I/O, and small enough that the update's copy is still in cache when it reads it.
  static constexpr int64_t kChunkFloats = int64_t{1} << 18;

  // `live`: the memory as it is at the save (count floats); `side`: where a chunk goes when the
  // live one must change before it is written (count floats too; null only for memory nobody
  // updates, such as a private copy).
  struct Region {
    const float* live = nullptr;
    float* side = nullptr;
    int64_t count = 0;
  };

  CopyOnWrite() = default;
  CopyOnWrite(const CopyOnWrite&) = delete;
  CopyOnWrite& operator=(const CopyOnWrite&) = delete;

  // Starts a snapshot of `regions` (which must not overlap); every chunk is live.
  void arm(std::vector<Region> regions);
  // Ends it: the writer has taken every chunk it needs (or given up); updates go ahead freely.
  void disarm();
  bool armed() const { return armed_.load(std::memory_order_acquire); }

  int64_t chunks(size_t region) const;  // of region `region`
  int64_t total_chunks() const { return first_.empty() ? 0 : first_.back() + chunks(first_.size() - 1); }
  // The writer: chunk `chunk` of `region` as it was at arm() (kChunkFloats floats, fewer for the
  // last), valid until release(region, chunk). Waits while an update copies it.
  const float* acquire(size_t region, int64_t chunk);
  void release(size_t region, int64_t chunk);
  // The same for a chunk of a region without a side buffer, whose checksum the writer took.
  void release_hashed(size_t region, int64_t chunk, uint64_t checksum);
  bool writer_hashes(size_t region) const { return regions_.at(region).side == nullptr; }

  // The writer, once it has written every chunk: waits until every chunk's checksum is known (the
  // update took them) or finish_checksums() was called, then takes the rest itself. Afterwards
  // chunk_checksum gives checksum64 of each chunk as it was at arm().
  void wait_for_checksums();
  // How long the last wait_for_checksums waited for the update (or finish_checksums), seconds:
  // time the writer was idle, not writing. Read by the writer's thread after that call.
  double checksum_wait_seconds() const { return checksum_wait_seconds_; }
  uint64_t chunk_checksum(size_t region, int64_t chunk) const { return sums_[first_[region] + chunk]; }
  // Any thread that will not update the memory before the write completes (the end of the run,
  // a preemption, the next save, an error): the writer is to stop waiting for the update.
  void finish_checksums();

  // An updater, from any thread: [data, data + n) is about to change. Copies (and checksums) the
  // chunks of armed regions in that range that the writer has not taken, waits for one it is
  // writing, checksums one it has written. Returns at once when not armed.
  void before_update(const float* data, int64_t n);

  // before_update for an update that reads the old bytes anyway (checksummed_adamw.h): when
  // [data, data + n) is exactly one chunk of an armed region and the writer has written it, its
  // checksum is left to the caller, who hands it over with hashed_by_update(token, checksum64 of
  // those n floats as they are now) before anyone may wait for it (no throw in between). Returns
  // that token, else -1 after doing what before_update does.
  int64_t before_update_hashed_by_caller(const float* data, int64_t n);
  void hashed_by_update(int64_t token, uint64_t checksum);

  // Where the writer stands relative to [data, data + n): -1 when no chunk of it waits for the
  // writer (all written or copied, or not part of the snapshot), else the writer's position (in
  // the order it writes, over all regions) of the first such chunk. An updater that does the
  // ranges at -1 first and the others from the writer's far end gives the writer time and copies
  // less. A hint: the writer moves on meanwhile.
  int64_t writer_position(const float* data, int64_t n);

  // Chunks copied to the side since arm() (for tests and the save's summary).
  int64_t copied_chunks() const { return copied_.load(); }

 private:
  // kCopied and kHashed chunks have their checksum in sums_.
  enum State : uint8_t { kLive, kWriting, kWritten, kCopying, kCopied, kHashing, kHashed };
  std::atomic<uint8_t>& state(size_t region, int64_t chunk) { return states_[first_[region] + chunk]; }
  // Calls f(region, chunk) for every chunk of an armed region that meets [data, data + n).
  template <typename F>
  void for_each_chunk(const float* data, int64_t n, F&& f);
  void protect(size_t region, int64_t chunk);  // before_update of one chunk
  bool hash_written(size_t region, int64_t chunk);  // kWritten -> kHashed, if still kWritten
  const float* chunk_begin(const float* base, int64_t chunk) const { return base + chunk * kChunkFloats; }
  int64_t chunk_floats(size_t region, int64_t chunk) const;
  void hashed();  // one more chunk's checksum is known
  void wait_while(size_t region, int64_t chunk, State busy);
  void changed();  // wakes the waiters after a chunk's state moved on

  std::vector<Region> regions_;
  std::vector<int64_t> first_;       // index of each region's first chunk in states_
  std::vector<size_t> by_address_;   // region indices sorted by live address
  std::unique_ptr<std::atomic<uint8_t>[]> states_;
  std::atomic<bool> armed_{false};
  std::unique_ptr<uint64_t[]> sums_;  // per chunk: its checksum, once known
  std::atomic<int64_t> copied_{0};
  std::atomic<int64_t> hashed_{0};
  std::atomic<bool> finish_{false};
  double checksum_wait_seconds_ = 0.0;  // the writer's thread only
  std::mutex mutex_;
  std::condition_variable cv_;
};

// Tests only: a pause of `microseconds` in every acquire (a slow disk, so training overtakes the
// writer), and the chunks copied to the side by every instance since the process began.
void set_write_delay_for_testing(int microseconds);
int64_t chunks_copied_for_testing();

}  // namespace nd::train
