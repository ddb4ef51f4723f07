// PeerComm: a Comm decorator whose all-reduce (Sum/Avg, f32/bf16) runs over peer memory on the
// GPUs of one node (kernels/cuda/peer_allreduce.h; buffers registered at start, calls meeting at
// flags in peer memory, safe under CUDA graph replay): one-shot, two-shot, push (flags inside the
// data words), or `auto` by size from a table made at start. Its reduce-scatters and all-gathers
// run on the copy engines (peer_copy.h) with the extras of PeerMemory. Anything else (Max, no peer
// access, other dtypes, larger than the buffer) is the wrapped comm's.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dist/comm/forwarding_comm.h"
#include "dist/comm/peer_copy.h"
#include "dist/comm/peer_memory.h"
#include "dist/comm/ring_allreduce.h"

namespace nd::dist {

class PeerComm;

// What one all-reduce of up to each size runs, in increasing size (auto's decision; the last entry
// covers everything larger): one of kAutoChoices.
using AutoTable = std::vector<std::pair<int64_t, Algorithm>>;
// The choices of `auto`, in the order of its tables: one-shot, two-shot, our ring, NCCL, push.
constexpr int kAutoChoiceCount = 5;
constexpr Algorithm kAutoChoices[kAutoChoiceCount] = {Algorithm::OneShot, Algorithm::TwoShot, Algorithm::Ring,
                                                      Algorithm::Native, Algorithm::Push};
// One-shot, two-shot and push run over registered peer memory (up to PeerComm::largest_bytes).
bool is_peer_choice(Algorithm algorithm);

struct PeerOptions {
  // oneshot, twoshot, peer (one-shot up to one_shot_max_bytes, two-shot above), push or auto.
  Algorithm mode = Algorithm::Peer;
  // The registered data region per rank: all-reduces up to this many bytes run over peer memory.
  int64_t buffer_bytes = int64_t{64} << 20;
  // Algorithm::Peer: one-shot up to this many bytes, two-shot above.
  int64_t one_shot_max_bytes = int64_t{256} << 10;
  // Push (one-shot with flags in the data): all-reduces up to this many bytes (and the buffer) can
  // push; each rank registers a receive area of 4 x nranks x this many bytes for it (0: no push).
  int64_t push_max_bytes = int64_t{1} << 20;
  // A rank that waits longer than this for a peer's flag stops its kernel (async_error says who).
  // As long as --comm-timeout's default: ranks may legitimately drift apart on the host for
  // minutes (one writes a checkpoint while the other launches the next step's all-reduce).
  double timeout_s = 600.0;
  // Algorithm::Auto: makes this comm's decision table once its peer memory is set up (each split
  // calls it again for its own), collectively: dist/comm/bench/auto_choice.h times the choices, or
  // reads a table bench-comm saved. Unset, or without peer memory, every all-reduce is NCCL's.
  std::function<AutoTable(PeerComm&)> decide;
  RingOptions ring;  // auto's ring
  // Reduce-scatters (Sum/Avg, f32/bf16) and all-gathers run on the copy engines (dist/comm/peer_copy.h),
  // which leave the SMs to the GEMMs they hide behind, through slots of this many bytes per rank
  // (larger blocks in slot-sized pieces; the two-half reduce-scatter only for a block that fits);
  // each rank registers PeerCopy::kSlots x ranks of them. 0: the wrapped comm's.
  int64_t copy_block_bytes = int64_t{16} << 20;
};

class PeerComm : public ForwardingComm, public PeerMemory {
 public:
  // Collective over `inner` (every rank passes the same options): registers and exchanges the
  // buffers where every rank is on one node with peer access to every other and `inner` is an
  // NcclComm; otherwise peer_usable() is false and every call is the wrapped comm's.
  explicit PeerComm(Comm& inner, const PeerOptions& options = {});
  explicit PeerComm(std::unique_ptr<Comm> inner, const PeerOptions& options = {});
  ~PeerComm() override;

  const PeerOptions& options() const { return options_; }
  bool peer_usable() const { return registration_ != nullptr; }
  const std::string& unusable_reason() const { return unusable_reason_; }
  // What an all-reduce of `bytes` (f32/bf16, Sum/Avg) runs on this comm: one of kAutoChoices.
  Algorithm choice(int64_t bytes) const;
  // The largest all-reduce `choice` runs over peer memory (a peer choice: the buffer, or for push
  // the receive area; ring and native: no limit). Larger ones are the wrapped comm's.
  int64_t largest_bytes(Algorithm choice) const;
  // Auto: the decision table (empty: every all-reduce is NCCL's).
  const AutoTable& auto_table() const { return auto_table_; }

  CommWork allreduce_async(Tensor& buffer, ReduceOp op) override;
  // On the copy engines (options().copy_block_bytes > 0, f32/bf16 Sum/Avg for the reduce-scatter),
  // else the wrapped comm's.
  CommWork reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op) override;
  CommWork all_gather_async(const Tensor& input, Tensor& output) override;
  // Its PeerMemory where the copy engines are usable, else none.
  PeerMemory* peer_memory() override { return copy_ ? this : nullptr; }

  // PeerMemory. Into a shared_tensor(), each block of an all-gather goes straight into place on
  // every rank, this rank's own left alone by all_gather_others_async.
  CommWork all_gather_others_async(const Tensor& input, Tensor& output) override;
  // Registered with the peers for the copy engines' all-gathers (PeerCopy::share) where they are
  // usable; else a plain zeroed tensor.
  Tensor shared_tensor(const Shape& shape, DType dtype) override;
  bool shares(const Tensor& t) const override { return copy_ && copy_->shared_index(t) >= 0; }
  // One of up to kGatherScratch shared buffers of this shape's size and dtype that no tensor views
  // any more (the caller's readers were queued before it let go, and the copy engines' grants order
  // the peers' writes after them); a new one is registered only outside a CUDA graph's capture
  // (registering talks to the peers on the host). None free: a plain tensor, gathered through the slots.
  Tensor gather_scratch(const Shape& shape, DType dtype) override;
  static constexpr size_t kGatherScratch = 4;
  // Both halves on the copy engines where reduce_scatter_async would take them (one dtype).
  bool reduce_scatter_in_halves(const Tensor& output, ReduceOp op) override;
  // Sum and Avg on the copy engines.
  bool reduce_scatter_widens(ReduceOp op) override;
  // Sum and Avg into f32 on the copy engines, from f32 or (where they widen) bf16: the sum kernel
  // adds into the output.
  bool reduce_scatter_accumulates(ReduceOp op, DType in, DType out) override;
  CommWork reduce_scatter_accumulate_async(const Tensor& input, Tensor& output, ReduceOp op) override;
  ScatterTicket reduce_scatter_send(const Tensor& input, const Tensor& output, ReduceOp op) override;
  CommWork reduce_scatter_finish(const ScatterTicket& ticket, const Tensor& input, Tensor& output,
                                 ReduceOp op) override;

  // Whether reduce-scatters and all-gathers can run on the copy engines (why not: copy_unusable_reason).
  bool copy_usable() const { return copy_ != nullptr; }
  const std::string& copy_unusable_reason() const { return copy_unusable_reason_; }
  // A PeerComm around the wrapped comm's split, same options (registers its own buffers).
  std::unique_ptr<Comm> split(int color, int key) override;
  // The wrapped comm's error, or a peer flag's timeout (rank, phase, block, peer).
  std::string async_error() override;

  // Runs `choice` (one of kAutoChoices) for this all-reduce whatever the size (bench-comm's --impl
  // oneshot/twoshot, and auto's measurement); Native and Ring always run, the peer ones fail over
  // like allreduce_async.
  CommWork allreduce_with(Algorithm choice, Tensor& buffer, ReduceOp op);

 private:
  struct Registration;
  void set_up();
  bool peer_fits(const Tensor& buffer, ReduceOp op) const;
  // Queues `work` on the wrapped comm's stream, ordered after the compute queued so far, and returns
  // it as a CommWork; inside a trace span when the wrapped comm is a TracingComm (--trace).
  CommWork on_track(const char* what, int64_t bytes, const std::function<void()>& work);
  // Whether the copy engines can reduce into `output` with `op` (f32 or bf16, Sum or Avg).
  bool copy_reduces(const Tensor& output, ReduceOp op) const;
  // Whether this reduce-scatter runs on the copy engines (then its layout is agreed here).
  bool copy_takes_scatter(const Tensor& input, const Tensor& output, ReduceOp op);
  // An all-gather on the copy engines where it can run there (straight into a shared buffer, or
  // through the slots), else the wrapped comm's; own_block false: block rank() may be left alone.
  CommWork gather(const Tensor& input, Tensor& output, bool own_block);

  PeerOptions options_;
  std::unique_ptr<Registration> registration_;
  std::string unusable_reason_;
  std::unique_ptr<PeerCopy> copy_;  // after registration_: destroyed first, after the destructor's barrier
  std::string copy_unusable_reason_;
  std::vector<Tensor> gather_scratch_;  // gather_scratch's buffers, flat
  std::unique_ptr<Comm> ring_;  // RingComm over the wrapped comm, for auto's ring choice
  AutoTable auto_table_;
};

}  // namespace nd::dist
