// PeerCopy: all-gather and reduce-scatter between the GPUs of one node, moved by the copy engines
// (cudaMemcpyAsync into peer memory mapped through CUDA IPC) so that no SM is taken from the
// persistent GEMMs they hide behind. The ranks meet at flags that stream memory operations write
// and await (cuStreamWriteValue32/WaitValue32: no kernel, no host wait, capturable in a CUDA
// graph); the reduce-scatter's sum is the one kernel (kernels/cuda/sum_blocks.h).
//
// Each rank registers kSlots slots of ranks x block_bytes; a call takes the next slot (the same on
// every rank), and sender q's block for rank r lands in r's slot at block q; larger blocks move in
// slot-sized pieces. Per slot and pair, full[s][q] (in the receiver's region: q's block is in) and
// free[s][r] (in the sender's: r has consumed it; 1 at start): a sender waits for free, clears it,
// copies, sets full; the receiver waits for full, clears it, consumes, sets free. A rank that never
// comes leaves the others waiting on the device until --comm-timeout (dist/comm/watchdog.h).
//
// Shared buffers (share(), up to kShared) take an all-gather with no slot: each rank copies its
// block straight into every peer's output. Per buffer and pair, granted[b][q] (in the sender's
// region: q's earlier readers are done) and landed[b][q] (in the receiver's: q's block is in);
// each call starts with the grants, so a sender never overwrites what a receiver still reads.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dist/comm/comm.h"

namespace nd::dist {

class PeerCopy {
 public:
  static constexpr int kSlots = 4;
  static constexpr int kShared = 16;

  // Collective over `host` (an NCCL comm whose ranks share one node with peer access to each
  // other, which the caller has agreed on; every rank passes the same block_bytes, a positive
  // multiple of 256). Transfers run on `stream` (a cudaStream_t). nullptr on every rank when some
  // rank cannot set it up (the reason in *why).
  static std::unique_ptr<PeerCopy> create(Comm& host, int device, void* stream, int64_t block_bytes,
                                          std::string* why);
  ~PeerCopy();
  PeerCopy(const PeerCopy&) = delete;
  PeerCopy& operator=(const PeerCopy&) = delete;

  // Whether a call's per-rank block `block` is on this device (all_gather and reduce_scatter take
  // any size), and whether it also fits one slot (the two halves take one slot).
  bool on_device(const Tensor& block) const;
  bool fits(const Tensor& block) const;
  // Comm::all_gather's semantics, queued on the stream: output (ranks * n) block r = rank r's input.
  void all_gather(const Tensor& input, Tensor& output);
  // Comm::reduce_scatter's, f32 or bf16: output (n) = scale * the sum over ranks, in rank order, of
  // their input's block rank() (input ranks * n). A bf16 input may land in an f32 output: the bf16
  // blocks move (half the bytes of f32 ones) and the sum widens them, so the result has the bits
  // of the f32 reduce-scatter of the input widened first. `accumulate` (an f32 output): output +=
  // that result instead, added by the same sum kernel (kernels/cuda/sum_blocks.h: out + the scaled
  // sum, one rounding), with no temporary.
  void reduce_scatter(const Tensor& input, Tensor& output, float scale, bool accumulate = false);
  // reduce_scatter in two halves (PeerMemory::reduce_scatter_send), for a block that fits one slot:
  // send_blocks sends every block of `input` (of block_bytes each) but this rank's and returns the
  // slot; finish_reduce_scatter, next on this stream, awaits the peers' blocks and sums them with
  // this rank's.
  int send_blocks(const Tensor& input, int64_t block_bytes);
  void finish_reduce_scatter(int slot, const Tensor& input, Tensor& output, float scale);

  // Collective over the host comm: registers `buffer` (a whole allocation on this device: the
  // caching allocator's blocks are cudaMalloc'd one by one; the same size on every rank) as the
  // next shared buffer, for as long as its storage lives. False on every rank once kShared are
  // registered (the buffer then stays a plain one).
  bool share(const Tensor& buffer);
  // The shared buffer whose storage `output` lies in (while that storage lives), or -1.
  int shared_index(const Tensor& output) const;
  // all_gather whose output lies in shared buffer `index`, at the same offset on every rank: this
  // rank's input copied into every peer's output in place; own_block: also into its own output
  // (else block rank() is left as it is).
  void all_gather_shared(int index, const Tensor& input, Tensor& output, bool own_block);

 private:
  PeerCopy(Comm& host, int device, void* stream, int64_t block_bytes);
  uint32_t* full(int owner, int slot, int sender) const;
  uint32_t* free_flag(int owner, int slot, int receiver) const;
  uint32_t* granted(int owner, int index, int receiver) const;
  uint32_t* landed(int owner, int index, int sender) const;
  char* block(int owner, int slot, int sender) const;
  // Sends this rank's `blocks[q]` (bytes each) to every peer q's slot, on `stream`.
  void push_to_peers(int slot, const std::vector<const void*>& blocks, int64_t bytes, void* stream);
  // side waits for the work queued on stream_ so far; stream_'s next work waits for side's.
  void fork_to(void* side);
  void join_from(void* side);
  // The stream a call's pushes go on: push_stream_ for a block of several pieces, else stream_.
  void* push_stream_for(int64_t bytes) const;
  // The next slot, in turn (the same on every rank: calls come in the same order).
  int take_slot();
  // Moves a call's blocks of `bytes` each in pieces of at most a slot: for the piece at offset `at`,
  // pushes blocks_at(at) (rank q's piece at index q) to the peers, awaits theirs, consume(slot, at,
  // piece) on stream_, then frees the slot for its senders.
  void move_in_pieces(int64_t bytes, const std::function<std::vector<const void*>(int64_t at)>& blocks_at,
                      const std::function<void(int slot, int64_t at, int64_t piece)>& consume);
  void await_peers(int slot);
  void release_peers(int slot);
  void check_scatter(const Tensor& input, const Tensor& output) const;
  // out (in `out_dtype`) = scale * the sum, in rank order, of this rank's `own` piece (`piece`
  // bytes of dtype `in`) and those that arrived in `slot`; `accumulate`: out += that.
  void sum_piece(int slot, const void* own, void* out, int64_t piece, DType in, DType out_dtype, float scale,
                 bool accumulate) const;
  template <typename TIn, typename TOut>
  void sum_arrived(int slot, const void* own, void* out, int64_t count, float scale, bool accumulate) const;

  int rank_, ranks_, device_;
  void* stream_;
  int64_t block_bytes_;
  void* own_ = nullptr;
  // The all-gather's local copy of this rank's own block runs on a stream of its own, beside the
  // pushes, forked from and joined back to stream_ by events; so do the pushes of a block of
  // several pieces, which then run ahead of the pieces' consumption on stream_.
  void* side_stream_ = nullptr;
  void* push_stream_ = nullptr;
  void* fork_ = nullptr;
  void* join_ = nullptr;
  std::vector<void*> opened_;
  std::vector<char*> regions_;  // rank q's region as mapped here
  struct Shared {
    // Its storage here: a later allocation at the same address is not this buffer (its peers'
    // may be gone), so a buffer is matched by storage, never by address.
    std::weak_ptr<Storage> storage;
    char* base = nullptr;
    std::vector<void*> opened;  // rank q's buffer as mapped here (nullptr at this rank)
  };
  std::vector<Shared> shared_;
  Comm* host_ = nullptr;
  int next_slot_ = 0;
};

}  // namespace nd::dist
