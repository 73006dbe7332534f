// The cuDNN calls of cudnn.h (CTRAX_USE_CUDNN builds only; see kernels/CMakeLists.txt).
//
// cuDNN 9 marks its legacy (descriptor) API deprecated in favour of the graph API; the legacy
// calls are still supported and are exactly what the comparison needs, so the warnings are off
// for this file only.
#include "cudnn.h"

#include <cudnn.h>

#include <array>
#include <climits>
#include <map>
#include <mutex>

#include "cuda_check.h"
#include "runtime.h"

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

namespace ctrax::kernels::cuda {

namespace detail {
[[noreturn]] inline void cudnn_call_failed(cudnnStatus_t status, const char* call, const char* file, int line) {
  CTRAX_THROW("cuDNN error ", static_cast<int>(status), " (", cudnnGetErrorString(status), ") from ", call, " at ",
              file, ":", line);
}
}  // namespace detail

#define CTRAX_CUDNN_CHECK(call)                                                                      \
  do {                                                                                               \
    const cudnnStatus_t ctrax_cudnn_status_ = (call);                                                \
    if (ctrax_cudnn_status_ != CUDNN_STATUS_SUCCESS) [[unlikely]]                                    \
      ::ctrax::kernels::cuda::detail::cudnn_call_failed(ctrax_cudnn_status_, #call, __FILE__, __LINE__); \
  } while (0)

namespace {

constexpr int kMaxDevices = 64;

// One handle per device, created on first use with that device current, never destroyed
// (cudnnDestroy at static destruction may run after the CUDA runtime has torn the contexts
// down; the same reasoning as the cuBLAS handles in gemm_0_cublas.cu). The stream is set on
// every call: cheap, and it follows set_device.
cudnnHandle_t handle() {
  static std::mutex mutex;
  static std::array<cudnnHandle_t, kMaxDevices> handles{};
  const int device = current_device();
  CTRAX_REQUIRE(device >= 0 && device < kMaxDevices, "cudnn: device index ", device, " is beyond the ",
                kMaxDevices, " devices ctrax keeps cuDNN handles for");
  cudnnHandle_t h = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    cudnnHandle_t& slot = handles[static_cast<size_t>(device)];
    if (slot == nullptr) CTRAX_CUDNN_CHECK(cudnnCreate(&slot));
    h = slot;
  }
  CTRAX_CUDNN_CHECK(cudnnSetStream(h, static_cast<cudaStream_t>(current_stream())));
  return h;
}

// Owns one cuDNN descriptor.
template <typename T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class Descriptor {
 public:
  Descriptor() { CTRAX_CUDNN_CHECK(Create(&d_)); }
  ~Descriptor() { Destroy(d_); }  // cannot fail for a created descriptor; never throw here
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  T get() const { return d_; }

 private:
  T d_{};
};
using TensorDesc = Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc = Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;
using ActivationDesc =
    Descriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor, cudnnDestroyActivationDescriptor>;

cudnnDataType_t data_type(ElementType type, const char* op) {
  if (type == ElementType::float32) return CUDNN_DATA_FLOAT;
  CTRAX_REQUIRE(type == ElementType::float64, op, ": cuDNN takes float32 or float64 here, got element type ",
                static_cast<int>(type));
  return CUDNN_DATA_DOUBLE;
}

// cuDNN's blend factors y = alpha * result + beta * y are double for double data and float
// otherwise.
struct Blend {
  float f_alpha = 1.0f, f_beta = 0.0f;
  double d_alpha = 1.0, d_beta = 0.0;
  bool is_double = false;
  explicit Blend(cudnnDataType_t t) : is_double(t == CUDNN_DATA_DOUBLE) {}
  const void* alpha() const { return is_double ? static_cast<const void*>(&d_alpha) : &f_alpha; }
  const void* beta() const { return is_double ? static_cast<const void*>(&d_beta) : &f_beta; }
};

int checked_int(int64_t v, const char* op, const char* what) {
  CTRAX_REQUIRE(v >= 0 && v <= INT_MAX, op, ": ", what, " ", v, " does not fit cuDNN's int sizes");
  return static_cast<int>(v);
}

// A workspace from ctrax's caching allocator. Freeing it right after queueing the call is safe:
// the next user of the block is queued after the call on the same stream (runtime.h).
class Workspace {
 public:
  explicit Workspace(size_t nbytes) : nbytes_(nbytes), device_(current_device()) {
    if (nbytes_ > 0) data_ = allocate(nbytes_, device_);
  }
  ~Workspace() {
    if (data_ != nullptr) deallocate(data_, nbytes_, device_);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  void* data() const { return data_; }
  size_t size() const { return nbytes_; }

 private:
  size_t nbytes_;
  int device_;
  void* data_ = nullptr;
};

}  // namespace

int cudnn_library_version() { return static_cast<int>(cudnnGetVersion()); }

void cudnn_softmax_rows(const void* x, void* y, ElementType type, int64_t rows, int64_t len, bool log) {
  const char* op = log ? "cudnn log_softmax" : "cudnn softmax";
  CTRAX_REQUIRE(rows >= 0 && len >= 0, op, ": negative size ", rows, " x ", len);
  if (rows == 0 || len == 0) return;
  const cudnnDataType_t dtype = data_type(type, op);
  checked_int(rows * len, op, "element count");
  // Each row is one instance (N) of `len` channels (C) with H = W = 1: INSTANCE mode
  // normalises over C, H, W per N.
  TensorDesc desc;
  CTRAX_CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc.get(), CUDNN_TENSOR_NCHW, dtype, checked_int(rows, op, "rows"),
                                               checked_int(len, op, "row length"), 1, 1));
  const Blend blend(dtype);
  CTRAX_CUDNN_CHECK(cudnnSoftmaxForward(handle(), log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                        CUDNN_SOFTMAX_MODE_INSTANCE, blend.alpha(), desc.get(), x, blend.beta(),
                                        desc.get(), y));
}

void cudnn_activation(CudnnActivation activation, const void* x, void* y, ElementType type, int64_t n) {
  const char* op = "cudnn activation";
  CTRAX_REQUIRE(n >= 0, op, ": negative size ", n);
  if (n == 0) return;
  const cudnnDataType_t dtype = data_type(type, op);
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
  if (activation == CudnnActivation::tanh) mode = CUDNN_ACTIVATION_TANH;
  else if (activation == CudnnActivation::sigmoid) mode = CUDNN_ACTIVATION_SIGMOID;
  ActivationDesc act;
  CTRAX_CUDNN_CHECK(cudnnSetActivationDescriptor(act.get(), mode, CUDNN_PROPAGATE_NAN, 0.0));
  TensorDesc desc;  // n elements as n instances of one channel
  CTRAX_CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc.get(), CUDNN_TENSOR_NCHW, dtype, checked_int(n, op, "size"), 1,
                                               1, 1));
  const Blend blend(dtype);
  CTRAX_CUDNN_CHECK(
      cudnnActivationForward(handle(), act.get(), blend.alpha(), desc.get(), x, blend.beta(), desc.get(), y));
}

// ---- Convolution ----------------------------------------------------------------------------

namespace {

enum class ConvPass { forward, backward_data, backward_filter };

// The descriptors of one convolution shape: x, w, y and the convolution itself.
struct ConvDescriptors {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;

  ConvDescriptors(const CudnnConv2d& c, ElementType type, const char* op) {
    CTRAX_REQUIRE(type == ElementType::float32, op, ": the cuDNN convolution takes float32, got element type ",
                  static_cast<int>(type));
    CTRAX_REQUIRE(c.batch >= 1 && c.height >= 1 && c.width >= 1 && c.in_channels >= 1 && c.filters >= 1 &&
                      c.kernel_h >= 1 && c.kernel_w >= 1 && c.stride_h >= 1 && c.stride_w >= 1 && c.pad_h >= 0 &&
                      c.pad_w >= 0,
                  op, ": sizes, kernel and strides must be >= 1 and padding >= 0, got input ", c.batch, "x", c.height,
                  "x", c.width, "x", c.in_channels, ", ", c.filters, " filters of ", c.kernel_h, "x", c.kernel_w,
                  ", strides ", c.stride_h, "x", c.stride_w, ", padding ", c.pad_h, "x", c.pad_w);
    CTRAX_REQUIRE(c.height + 2 * c.pad_h >= c.kernel_h && c.width + 2 * c.pad_w >= c.kernel_w, op, ": a ",
                  c.kernel_h, "x", c.kernel_w, " kernel does not fit the padded input ", c.height + 2 * c.pad_h, "x",
                  c.width + 2 * c.pad_w);
    checked_int(c.batch * c.height * c.width * c.in_channels, op, "input element count");
    checked_int(c.batch * c.out_h() * c.out_w() * c.filters, op, "output element count");
    checked_int(c.filters * c.kernel_h * c.kernel_w * c.in_channels, op, "kernel element count");
    const cudnnDataType_t dt = CUDNN_DATA_FLOAT;
    // cudnnSetTensor4dDescriptor takes the sizes in N, C, H, W order whatever the format.
    CTRAX_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x.get(), CUDNN_TENSOR_NHWC, dt, static_cast<int>(c.batch),
                                                 static_cast<int>(c.in_channels), static_cast<int>(c.height),
                                                 static_cast<int>(c.width)));
    CTRAX_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w.get(), dt, CUDNN_TENSOR_NHWC, static_cast<int>(c.filters),
                                                 static_cast<int>(c.in_channels), static_cast<int>(c.kernel_h),
                                                 static_cast<int>(c.kernel_w)));
    CTRAX_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv.get(), checked_int(c.pad_h, op, "padding"),
                                                      checked_int(c.pad_w, op, "padding"),
                                                      checked_int(c.stride_h, op, "stride"),
                                                      checked_int(c.stride_w, op, "stride"), 1, 1,
                                                      CUDNN_CROSS_CORRELATION, dt));
    // True FP32 (see cudnn.h): no TF32 tensor-core algorithms.
    CTRAX_CUDNN_CHECK(cudnnSetConvolutionMathType(conv.get(), CUDNN_FMA_MATH));
    int n = 0, ch = 0, h = 0, wd = 0;
    CTRAX_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv.get(), x.get(), w.get(), &n, &ch, &h, &wd));
    CTRAX_CHECK(n == c.batch && ch == c.filters && h == c.out_h() && wd == c.out_w(), "cuDNN's output shape ", n, "x",
                h, "x", wd, "x", ch, " differs from ", c.batch, "x", c.out_h(), "x", c.out_w(), "x", c.filters);
    CTRAX_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y.get(), CUDNN_TENSOR_NHWC, dt, n, ch, h, wd));
  }
};

// The remembered algorithm per (pass, device, shape): the _v7 heuristics are cheap but not
// free, and a training loop repeats the same shapes.
using AlgoKey = std::array<int64_t, 13>;
AlgoKey algo_key(ConvPass pass, const CudnnConv2d& c) {
  return {static_cast<int64_t>(pass), current_device(), c.batch, c.height, c.width, c.in_channels, c.filters,
          c.kernel_h, c.kernel_w, c.stride_h, c.stride_w, c.pad_h, c.pad_w};
}

std::mutex& algo_mutex() {
  static std::mutex m;
  return m;
}
std::map<AlgoKey, int>& algo_cache() {
  static std::map<AlgoKey, int> cache;
  return cache;
}

// The first result (cuDNN sorts them by expected speed) that works for this shape.
template <typename Perf>
int first_working(const Perf* perf, int count, const char* op) {
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) return static_cast<int>(perf[i].algo);
  CTRAX_THROW(op, ": cuDNN offers no working algorithm for this convolution (", count, " candidates)");
}

template <typename Choose>
int cached_algo(ConvPass pass, const CudnnConv2d& c, Choose choose) {
  const AlgoKey key = algo_key(pass, c);
  {
    std::lock_guard<std::mutex> lock(algo_mutex());
    auto it = algo_cache().find(key);
    if (it != algo_cache().end()) return it->second;
  }
  const int algo = choose();
  std::lock_guard<std::mutex> lock(algo_mutex());
  algo_cache()[key] = algo;
  return algo;
}

}  // namespace

void cudnn_conv2d_forward(const CudnnConv2d& c, ElementType type, const void* x, const void* w, void* y) {
  const char* op = "cudnn conv2d forward";
  const ConvDescriptors d(c, type, op);
  cudnnHandle_t h = handle();
  const auto algo = static_cast<cudnnConvolutionFwdAlgo_t>(cached_algo(ConvPass::forward, c, [&] {
    std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
    int returned = 0;
    CTRAX_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                                                             static_cast<int>(perf.size()), &returned, perf.data()));
    return first_working(perf.data(), returned, op);
  }));
  size_t bytes = 0;
  CTRAX_CUDNN_CHECK(
      cudnnGetConvolutionForwardWorkspaceSize(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), algo, &bytes));
  const Workspace ws(bytes);
  const Blend blend(CUDNN_DATA_FLOAT);
  CTRAX_CUDNN_CHECK(cudnnConvolutionForward(h, blend.alpha(), d.x.get(), x, d.w.get(), w, d.conv.get(), algo,
                                            ws.data(), ws.size(), blend.beta(), d.y.get(), y));
}

void cudnn_conv2d_backward_data(const CudnnConv2d& c, ElementType type, const void* w, const void* dy, void* dx) {
  const char* op = "cudnn conv2d backward data";
  const ConvDescriptors d(c, type, op);
  cudnnHandle_t h = handle();
  const auto algo = static_cast<cudnnConvolutionBwdDataAlgo_t>(cached_algo(ConvPass::backward_data, c, [&] {
    std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> perf{};
    int returned = 0;
    CTRAX_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        h, d.w.get(), d.y.get(), d.conv.get(), d.x.get(), static_cast<int>(perf.size()), &returned, perf.data()));
    return first_working(perf.data(), returned, op);
  }));
  size_t bytes = 0;
  CTRAX_CUDNN_CHECK(
      cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w.get(), d.y.get(), d.conv.get(), d.x.get(), algo, &bytes));
  const Workspace ws(bytes);
  const Blend blend(CUDNN_DATA_FLOAT);
  CTRAX_CUDNN_CHECK(cudnnConvolutionBackwardData(h, blend.alpha(), d.w.get(), w, d.y.get(), dy, d.conv.get(), algo,
                                                 ws.data(), ws.size(), blend.beta(), d.x.get(), dx));
}

void cudnn_conv2d_backward_filter(const CudnnConv2d& c, ElementType type, const void* x, const void* dy, void* dw) {
  const char* op = "cudnn conv2d backward filter";
  const ConvDescriptors d(c, type, op);
  cudnnHandle_t h = handle();
  const auto algo = static_cast<cudnnConvolutionBwdFilterAlgo_t>(cached_algo(ConvPass::backward_filter, c, [&] {
    std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT> perf{};
    int returned = 0;
    CTRAX_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        h, d.x.get(), d.y.get(), d.conv.get(), d.w.get(), static_cast<int>(perf.size()), &returned, perf.data()));
    return first_working(perf.data(), returned, op);
  }));
  size_t bytes = 0;
  CTRAX_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x.get(), d.y.get(), d.conv.get(), d.w.get(),
                                                                   algo, &bytes));
  const Workspace ws(bytes);
  const Blend blend(CUDNN_DATA_FLOAT);
  CTRAX_CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, blend.alpha(), d.x.get(), x, d.y.get(), dy, d.conv.get(), algo,
                                                   ws.data(), ws.size(), blend.beta(), d.w.get(), dw));
}

}  // namespace ctrax::kernels::cuda
