// The streams of the CUDA backend: per device one non-blocking compute stream (every kernel of a
// training step; each communicator has streams of its own, ordered to this one by events, see
// dist/comm/comm.h); and the device facts launchers size their grids by. Include only where CUDA is on.
#pragma once
#include <cuda_runtime.h>

namespace nd {

// The device that CUDA calls of this thread go to.
int current_cuda_device();

// The SMs of `device`, asked once per device: launchers that size their grid by it may call this on
// every launch, also while a stream is captured (an attribute query, no stream work).
int multiprocessor_count(int device);

// The compute stream of `device` (-1 = the current device), created on first use.
cudaStream_t compute_stream(int device = -1);

// True while the compute stream of `device` is being captured into a CUDA graph: then nothing
// may synchronise with the host (copies between devices stay stream-ordered, see copy_bytes).
bool compute_stream_capturing(int device = -1);

// Blocks the host until the compute stream of `device` is idle (a communicator's own streams:
// Comm::synchronize).
void synchronize_device_streams(int device = -1);

}  // namespace nd
