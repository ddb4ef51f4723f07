// The cuDNN attention entry points of a build without cuDNN (no libcudnn, cudnn.h or cudnn-frontend
// headers at configure time): each says so.
#include "kernels/cudnn/attention_cudnn.h"

#include "tensor/error.h"

namespace nd::cudnn {

namespace {
constexpr const char* kNoCudnn =
    "this nanodist was built without cuDNN attention (configure with libcudnn 9 and the cudnn-frontend headers: "
    "pip install nvidia-cudnn-frontend, or -DNANODIST_CUDNN_FRONTEND_INCLUDE=<dir>)";
}

bool attention_available(std::string* why) {
  if (why) *why = kNoCudnn;
  return false;
}

void attention_forward(const bf16*, bf16*, float*, int64_t, int64_t, int64_t, int64_t, const AttentionDropout&,
                       cudaStream_t) {
  ND_FAIL("attention_forward: " << kNoCudnn);
}

void attention_backward(const bf16*, const bf16*, const bf16*, const float*, GradDest<bf16>, int64_t, int64_t,
                        int64_t, int64_t, const AttentionDropout&, cudaStream_t) {
  ND_FAIL("attention_backward: " << kNoCudnn);
}

void attention_forward(const f16*, f16*, float*, int64_t, int64_t, int64_t, int64_t, const AttentionDropout&,
                       cudaStream_t) {
  ND_FAIL("attention_forward: " << kNoCudnn);
}

void attention_backward(const f16*, const f16*, const f16*, const float*, GradDest<f16>, int64_t, int64_t, int64_t,
                        int64_t, const AttentionDropout&, cudaStream_t) {
  ND_FAIL("attention_backward: " << kNoCudnn);
}

}  // namespace nd::cudnn
