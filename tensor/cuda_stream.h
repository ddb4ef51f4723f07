// The streams of the CUDA backend: per device one compute stream (every kernel of a training step)
// and one communication stream (collectives), both non-blocking, ordered by events; and the device
// facts launchers size their grids by. Include only where CUDA is on.
#pragma once
#include <cuda_runtime.h>

namespace nd {

// The device that CUDA calls of this thread go to.
int current_cuda_device();

// The SMs of `device`, asked once per device: launchers that size their grid by it may call this on
// every launch, also while a stream is captured (an attribute query, no stream work).
int multiprocessor_count(int device);

// The compute / communication stream of `device` (-1 = the current device), created on first use.
cudaStream_t compute_stream(int device = -1);
cudaStream_t comm_stream(int device = -1);

// Makes the communication stream wait for all work queued so far on the compute stream (and the
// reverse), without blocking the host: an event recorded on one, waited on by the other.
void comm_wait_for_compute(int device = -1);
void compute_wait_for_comm(int device = -1);

// True while the compute stream of `device` is being captured into a CUDA graph: then nothing
// may synchronise with the host (copies between devices stay stream-ordered, see copy_bytes).
bool compute_stream_capturing(int device = -1);

// Blocks the host until the compute (and communication) stream of `device` is idle.
void synchronize_device_streams(int device = -1);

}  // namespace nd
