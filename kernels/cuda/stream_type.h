// cudaStream_t without the CUDA headers, so that the kernel headers compile in every build (the
// autograd ops include them; without CUDA their calls are never reached). Same typedef as CUDA's.
#pragma once

struct CUstream_st;
typedef struct CUstream_st* cudaStream_t;
