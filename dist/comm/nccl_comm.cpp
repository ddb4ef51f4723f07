// NcclComm: NCCL on the comm's stream, MPI beside it for the unique id and host agreements.
// Compiled only in CUDA builds.
#include "dist/comm/nccl_comm.h"

#if NANODIST_WITH_CUDA
#include <cstdlib>
#include <string>

#include "dist/comm/mpi_check.h"
#include "dist/comm/nccl_check.h"
#include "dist/comm/world.h"
#include "tensor/cuda_stream.h"

namespace nd::dist {

namespace {

ncclDataType_t nccl_reduce_type(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return ncclFloat32;
    case DType::BF16:
      return ncclBfloat16;
    case DType::F16:
      return ncclFloat16;
    default:
      ND_FAIL("NCCL reductions take f32, bf16 or f16, not " << dtype_name(dtype));
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Avg:
      return ncclAvg;
    case ReduceOp::Max:
      return ncclMax;
  }
  ND_FAIL("unknown reduce op " << static_cast<int>(op));
}

// CTAs (channels) of the point-to-point communicator. NCCL spreads one send or recv over
// p2p channels / nranks of them (more once a channel would carry over 16 MiB), and by itself it
// picks fewer than its most; 64 (its most) puts more bytes in flight per call, which speeds the
// ring's large all-reduces up.
constexpr int kP2pCtas = 64;

// The comm stream's priority: the highest the device has, so that when a collective is queued
// beside a GEMM that fills every SM (tensor parallelism's overlapped all-gathers and
// reduce-scatters), the block scheduler starts NCCL's CTAs as soon as GEMM blocks retire instead
// of after the whole GEMM; otherwise the collective's "overlap" waits for the GEMM and comes out
// exposed after it.
int comm_stream_priority() {
  int least = 0, greatest = 0;
  CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  return greatest;
}
// Events behind CommWorks in flight at once before one is reused (DDP's buckets of one step).
constexpr size_t kWorkEvents = 64;

// Data movement does not care about the element type: it moves bytes.
size_t byte_count(const Tensor& t) { return t.nbytes(); }

}  // namespace

int select_local_gpu(MPI_Comm world) {
  LocalPlace place = local_place(world);
  int gpus = 0;
  cudaError_t rc = cudaGetDeviceCount(&gpus);
  if (rc != cudaSuccess) gpus = 0;
  // Every rank learns whether any node is short of GPUs, so all raise together.
  int short_here = place.size > gpus ? 1 : 0, short_anywhere = 0;
  MPI_CHECK(MPI_Allreduce(&short_here, &short_anywhere, 1, MPI_INT, MPI_MAX, world));
  ND_CHECK(!short_here, place.size << " ranks on this node but only " << gpus
                                   << " visible GPU(s): start at most one rank per GPU (check CUDA_VISIBLE_DEVICES)");
  ND_CHECK(!short_anywhere, "another node has more ranks than GPUs: start at most one rank per GPU");
  CUDA_CHECK(cudaSetDevice(place.rank));
  return place.rank;
}

NcclComm::NcclComm(MPI_Comm parent, int device_index, bool wide_p2p) : device_index_(device_index) {
  MPI_CHECK(MPI_Comm_dup(parent, &mpi_));
  MPI_CHECK(MPI_Comm_set_errhandler(mpi_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(mpi_, &rank_));
  MPI_CHECK(MPI_Comm_size(mpi_, &size_));
  CUDA_CHECK(cudaSetDevice(device_index_));
  ncclUniqueId id;
  if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi_));
  // Blocking: a non-blocking communicator hands every launch to a thread of NCCL's and the host
  // polls it, tens of microseconds of host time per call, more than a small all-reduce takes. The
  // watchdog reads ncclCommGetAsyncError and calls ncclCommAbort from its own thread, which NCCL
  // allows on a blocking communicator too (dist/parallel/fault_guard.h).
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  NCCL_CHECK(ncclCommInitRankConfig(&nccl_, size_, id, rank_, &config));
  if (wide_p2p) {
    // Its own communicator (not a split, so that its CTA count is its own), blocking, with more
    // CTAs for the ring's send/recv.
    ncclUniqueId wide_id;
    if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&wide_id));
    MPI_CHECK(MPI_Bcast(&wide_id, sizeof(wide_id), MPI_BYTE, 0, mpi_));
    ncclConfig_t wide = NCCL_CONFIG_INITIALIZER;
    wide.minCTAs = wide.maxCTAs = kP2pCtas;
    NCCL_CHECK(ncclCommInitRankConfig(&p2p_, size_, wide_id, rank_, &wide));
  } else {
    p2p_ = nccl_;
  }
  const int priority = comm_stream_priority();
  CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
  CUDA_CHECK(cudaStreamCreateWithPriority(&side_stream_, cudaStreamNonBlocking, priority));
  CUDA_CHECK(cudaEventCreateWithFlags(&compute_done_, cudaEventDisableTiming));
}

// A destructor must not throw, so its CUDA, NCCL and MPI calls are not checked.
NcclComm::~NcclComm() {
  cudaSetDevice(device_index_);
  if (stream_) cudaStreamSynchronize(stream_);
  if (side_stream_) cudaStreamSynchronize(side_stream_);
  scratch_.clear();
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  for (cudaEvent_t e : work_events_) cudaEventDestroy(e);
  for (ncclComm_t c : {p2p_ != nccl_ ? p2p_ : nullptr, nccl_}) {
    if (!c) continue;
    ncclCommFinalize(c);
    ncclCommDestroy(c);
  }
  if (compute_done_) cudaEventDestroy(compute_done_);
  if (side_stream_) cudaStreamDestroy(side_stream_);
  if (stream_) cudaStreamDestroy(stream_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && mpi_ != MPI_COMM_NULL) MPI_Comm_free(&mpi_);
}

void NcclComm::send(const Tensor& buffer, int peer) {
  check_comm_buffer(*this, buffer, "send buffer");
  check_peer(*this, peer, "send");
  NCCL_CHECK(ncclSend(buffer.raw_data(), byte_count(buffer), ncclUint8, peer, p2p_, stream_));
}

void NcclComm::recv(Tensor& buffer, int peer) {
  check_comm_buffer(*this, buffer, "recv buffer");
  check_peer(*this, peer, "recv");
  NCCL_CHECK(ncclRecv(buffer.raw_data(), byte_count(buffer), ncclUint8, peer, p2p_, stream_));
}

void NcclComm::group_start() {
  NCCL_CHECK(ncclGroupStart());
  ++group_depth_;
}

void NcclComm::post_group() {
  ND_CHECK(group_depth_ > 0, "group end without a group start");
  --group_depth_;
  NCCL_CHECK(ncclGroupEnd());
}

CommWork NcclComm::allreduce_async(Tensor& buffer, ReduceOp op) {
  check_comm_buffer(*this, buffer, "allreduce buffer");
  ncclDataType_t type = nccl_reduce_type(buffer.dtype());
  agree_on_layout(CollectiveOp::AllReduce, Algorithm::Native, buffer, static_cast<int>(op));
  order_after_compute();
  NCCL_CHECK(ncclAllReduce(buffer.raw_data(), buffer.raw_data(), buffer.numel(), type, nccl_op(op), nccl_, stream_));
  return record_work();
}

CommWork NcclComm::reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op) {
  check_reduce_scatter(*this, input, output);
  ncclDataType_t type = nccl_reduce_type(input.dtype());
  agree_on_layout(CollectiveOp::ReduceScatter, Algorithm::Native, input, static_cast<int>(op));
  order_after_compute();
  NCCL_CHECK(ncclReduceScatter(input.raw_data(), output.raw_data(), output.numel(), type, nccl_op(op),
                                             nccl_, stream_));
  return record_work();
}

CommWork NcclComm::all_gather_async(const Tensor& input, Tensor& output) {
  check_all_gather(*this, input, output);
  agree_on_layout(CollectiveOp::AllGather, Algorithm::Native, input, 0);
  order_after_compute();
  NCCL_CHECK(
      ncclAllGather(input.raw_data(), output.raw_data(), byte_count(input), ncclUint8, nccl_, stream_));
  return record_work();
}

CommWork NcclComm::broadcast_async(Tensor& buffer, int root) {
  check_comm_buffer(*this, buffer, "broadcast buffer");
  check_peer(*this, root, "broadcast root");
  agree_on_layout(CollectiveOp::Broadcast, Algorithm::Native, buffer, root);
  order_after_compute();
  NCCL_CHECK(ncclBroadcast(buffer.raw_data(), buffer.raw_data(), byte_count(buffer), ncclUint8, root, nccl_, stream_));
  return record_work();
}

CommWork NcclComm::all_to_all_async(const Tensor& input, Tensor& output) {
  check_all_to_all(*this, input, output);
  agree_on_layout(CollectiveOp::AllToAll, Algorithm::Native, input, 0);
  order_after_compute();
  const size_t block = byte_count(input) / size_;
  auto* in = static_cast<const char*>(input.raw_data());
  auto* out = static_cast<char*>(output.raw_data());
  if (block > 0) {
    CUDA_CHECK(cudaMemcpyAsync(out + rank_ * block, in + rank_ * block, block, cudaMemcpyDeviceToDevice, stream_));
    NCCL_CHECK(ncclGroupStart());
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      NCCL_CHECK(ncclSend(in + q * block, block, ncclUint8, q, nccl_, stream_));
      NCCL_CHECK(ncclRecv(out + q * block, block, ncclUint8, q, nccl_, stream_));
    }
    NCCL_CHECK(ncclGroupEnd());
  }
  return record_work();
}

void NcclComm::order_after_compute() {
  CUDA_CHECK(cudaSetDevice(device_index_));
  CUDA_CHECK(cudaEventRecord(compute_done_, compute_stream(device_index_)));
  CUDA_CHECK(cudaStreamWaitEvent(stream_, compute_done_, 0));
}

void NcclComm::stream_copy(Tensor& dst, const Tensor& src) {
  check_comm_buffer(*this, dst, "stream_copy destination");
  check_comm_buffer(*this, src, "stream_copy source");
  ND_CHECK(dst.dtype() == src.dtype() && dst.numel() == src.numel(),
           "stream_copy: " << src.str() << " does not fit " << dst.str());
  if (dst.numel() == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), src.nbytes(), cudaMemcpyDeviceToDevice, stream_));
}

CommWork NcclComm::record_work() {
  if (work_events_.size() < kWorkEvents) {
    CUDA_CHECK(cudaSetDevice(device_index_));
    cudaEvent_t e;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    work_events_.push_back(e);
  }
  cudaEvent_t event = work_events_[next_work_event_++ % work_events_.size()];
  CUDA_CHECK(cudaEventRecord(event, stream_));
  return CommWork(event, device_index_);
}

void NcclComm::barrier() {
  synchronize();
  MPI_CHECK(MPI_Barrier(mpi_));
}

std::unique_ptr<Comm> NcclComm::split(int color, int key) {
  ND_CHECK(color >= 0, "split: color " << color << " must be >= 0");
  MPI_Comm child;
  MPI_CHECK(MPI_Comm_split(mpi_, color, key, &child));
  auto result = std::make_unique<NcclComm>(child, device_index_, p2p_ != nccl_);
  MPI_CHECK(MPI_Comm_free(&child));
  return result;
}

void NcclComm::synchronize() {
  CUDA_CHECK(cudaStreamSynchronize(side_stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  synchronize_device_streams(device_index_);
}

void NcclComm::host_allreduce(int64_t* values, int n, HostReduce op) {
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_INT64_T, op == HostReduce::Sum ? MPI_SUM : MPI_MAX, mpi_));
}

void NcclComm::host_allreduce(double* values, int n, HostReduce op) {
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, op == HostReduce::Sum ? MPI_SUM : MPI_MAX, mpi_));
}

std::string NcclComm::async_error() {
  if (aborted_) return "";
  for (ncclComm_t c : {nccl_, p2p_}) {
    ncclResult_t state = ncclSuccess;
    if (c && ncclCommGetAsyncError(c, &state) == ncclSuccess && state != ncclSuccess && state != ncclInProgress)
      return std::string(ncclGetErrorString(state)) + " " + ncclGetLastError(c);
  }
  return "";
}

// Called from the watchdog thread just before the process ends: in-flight kernels give up, so
// the GPU is free at once. The communicators are not used again.
void NcclComm::abort() {
  if (aborted_.exchange(true)) return;
  if (p2p_ && p2p_ != nccl_) ncclCommAbort(p2p_);
  if (nccl_) ncclCommAbort(nccl_);
}

cudaEvent_t NcclComm::event(size_t i) {
  while (events_.size() <= i) {
    cudaEvent_t e;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events_.push_back(e);
  }
  return events_[i];
}

Tensor NcclComm::scratch(int64_t numel, DType dtype) {
  Tensor& buffer = scratch_[dtype];
  if (!buffer.defined() || buffer.numel() < numel) {
    synchronize();  // queued work may still read the old buffer
    buffer = Tensor();
    buffer = Tensor::empty({numel}, dtype, device());
  }
  return buffer.narrow(0, numel);
}

}  // namespace nd::dist
#endif
