// The CUDA backend as a module: the table of functions that libctrax_cuda.so hands the core.
//
// What it is for: a program that never asks for a GPU must not load the CUDA libraries, even
// from a build that compiled them. So the CUDA kernels, the runtime layer and cuDNN live in
// their own shared library (target ctrax_cuda, component ctrax::cuda), and the core calls
// every kernels::cuda function through this table, which kernels/cuda/loader.cpp fills with
// dlopen the first time a CUDA device is asked for (ggml's backends work the same way). The
// module exports one C symbol, ctrax_cuda_module_table; everything else in it is local, so its
// definitions of the kernels::cuda functions never clash with the core's forwarders of the
// same names. Design notes: docs/cuda.md.
//
// What it is not for: public API (not installed); callers use the kernels/cuda/*.h functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cudnn.h"
#include "copy.h"
#include "elementwise.h"
#include "gather_scatter.h"
#include "gemm.h"
#include "nccl.h"
#include "optimizer_steps.h"
#include "random.h"
#include "reduce.h"
#include "runtime.h"
#include "scan.h"
#include "softmax.h"
#include "sort.h"

// X(member, function, return type, (parameters), (arguments)): one row per function the core
// forwards. A member differs from its function's name only where the function is overloaded.
// available, unavailable_reason, device_count and release_cached_memory are forwarded by hand
// (the core answers them itself when the module is missing).
#define CTRAX_CUDA_MODULE_FUNCTIONS(X)                                                                          \
  X(set_device, set_device, void, (int index), (index))                                                       \
  X(current_device, current_device, int, (), ())                                                              \
  X(device_info, device_info, DeviceInfo, (int index), (index))                                               \
  X(current_stream, current_stream, void*, (), ())                                                            \
  X(synchronize, synchronize, void, (), ())                                                                   \
  X(allocate, allocate, void*, (size_t nbytes, int device), (nbytes, device))                                  \
  X(deallocate, deallocate, void, (void* pointer, size_t nbytes, int device), (pointer, nbytes, device))       \
  X(allocator_stats, allocator_stats, AllocatorStats, (int device), (device))                                 \
  X(copy_host_to_device, copy_host_to_device, void, (void* dst, const void* src, size_t nbytes, int device),   \
    (dst, src, nbytes, device))                                                                               \
  X(copy_device_to_host, copy_device_to_host, void, (void* dst, const void* src, size_t nbytes, int device),   \
    (dst, src, nbytes, device))                                                                               \
  X(copy_device_to_device, copy_device_to_device, void,                                                       \
    (void* dst, int dst_device, const void* src, int src_device, size_t nbytes),                              \
    (dst, dst_device, src, src_device, nbytes))                                                               \
  X(allocate_pinned, allocate_pinned, void*, (size_t nbytes), (nbytes))                                       \
  X(free_pinned, free_pinned, void, (void* pointer), (pointer))                                               \
  X(strided_copy, strided_copy, void,                                                                         \
    (const StridedArg& dst, ElementType dst_type, const StridedArg& src, ElementType src_type),               \
    (dst, dst_type, src, src_type))                                                                           \
  X(fill, fill, void, (const StridedArg& dst, ElementType dst_type, double value), (dst, dst_type, value))     \
  X(unary, unary, void,                                                                                       \
    (UnaryOp op, const StridedArg& out, ElementType out_t, const StridedArg& x, ElementType x_t, double p0,    \
     double p1),                                                                                              \
    (op, out, out_t, x, x_t, p0, p1))                                                                         \
  X(binary, binary, void,                                                                                     \
    (BinaryOp op, const StridedArg& out, ElementType out_t, const StridedArg& a, const StridedArg& b,           \
     ElementType t),                                                                                          \
    (op, out, out_t, a, b, t))                                                                                \
  X(binary_scalar, binary_scalar, void,                                                                       \
    (BinaryOp op, const StridedArg& out, ElementType out_t, const StridedArg& x, ElementType t, double scalar, \
     bool scalar_first),                                                                                      \
    (op, out, out_t, x, t, scalar, scalar_first))                                                             \
  X(where, where, void,                                                                                       \
    (const StridedArg& out, ElementType t, const StridedArg& cond, const StridedArg& a, const StridedArg& b),  \
    (out, t, cond, a, b))                                                                                     \
  X(any_negative, any_negative, bool, (const StridedArg& x, ElementType t, int device), (x, t, device))       \
  X(one_hot, one_hot, void,                                                                                   \
    (void* out, ElementType out_type, const StridedArg& indices, ElementType index_type, int64_t depth),       \
    (out, out_type, indices, index_type, depth))                                                              \
  X(gather, gather, BadIndex,                                                                                 \
    (const StridedArg& out, const StridedArg& x, ElementType value_type, const StridedArg& index,             \
     ElementType index_type, int64_t axis_size, int64_t axis_stride),                                         \
    (out, x, value_type, index, index_type, axis_size, axis_stride))                                          \
  X(scatter_add, scatter_add, BadIndex,                                                                       \
    (const StridedArg& target, const StridedArg& src, ElementType value_type, const StridedArg& index,        \
     ElementType index_type, int64_t axis_size, int64_t axis_stride),                                         \
    (target, src, value_type, index, index_type, axis_size, axis_stride))                                     \
  X(sgemm_versioned, sgemm, void,                                                                             \
    (int version, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,   \
     int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc),                            \
    (version, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))                                \
  X(sgemm, sgemm, void,                                                                                       \
    (bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,   \
     const float* b, int64_t ldb, float beta, float* c, int64_t ldc),                                         \
    (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))                                         \
  X(sgemm_version_count, sgemm_version_count, int, (), ())                                                    \
  X(sgemm_version_name, sgemm_version_name, const char*, (int version), (version))                            \
  X(default_sgemm_version, default_sgemm_version, int, (), ())                                                \
  X(set_sgemm_version, set_sgemm_version, void, (int version), (version))                                     \
  X(sgemm_version, sgemm_version, int, (), ())                                                                \
  X(dgemm, dgemm, void,                                                                                       \
    (bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda, \
     const double* b, int64_t ldb, double beta, double* c, int64_t ldc),                                      \
    (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))                                         \
  X(sum_of_squares_f32, sum_of_squares, double, (const float* x, int64_t n), (x, n))                          \
  X(sum_of_squares_f64, sum_of_squares, double, (const double* x, int64_t n), (x, n))                         \
  X(sgd_step_f32, sgd_step, double, (const SgdStep& p, const float* g, float* w, int64_t n), (p, g, w, n))      \
  X(sgd_step_f64, sgd_step, double, (const SgdStep& p, const double* g, double* w, int64_t n), (p, g, w, n))    \
  X(momentum_step_f32, momentum_step, double,                                                                 \
    (const MomentumStep& p, const float* g, float* w, float* velocity, int64_t n), (p, g, w, velocity, n))     \
  X(momentum_step_f64, momentum_step, double,                                                                 \
    (const MomentumStep& p, const double* g, double* w, double* velocity, int64_t n), (p, g, w, velocity, n))  \
  X(adam_step_f32, adam_step, double, (const AdamStep& p, const float* g, float* w, float* m, float* v, int64_t n), \
    (p, g, w, m, v, n))                                                                                       \
  X(adam_step_f64, adam_step, double,                                                                         \
    (const AdamStep& p, const double* g, double* w, double* m, double* v, int64_t n), (p, g, w, m, v, n))      \
  X(rmsprop_step_f32, rmsprop_step, double,                                                                   \
    (const RmsPropStep& p, const float* g, float* w, float* mean_square, int64_t n), (p, g, w, mean_square, n)) \
  X(rmsprop_step_f64, rmsprop_step, double,                                                                   \
    (const RmsPropStep& p, const double* g, double* w, double* mean_square, int64_t n),                       \
    (p, g, w, mean_square, n))                                                                                \
  X(random_uniform, random_uniform, void,                                                                     \
    (PhiloxKey key, void* out, ElementType type, int64_t n, double lo, double hi, double below_hi),           \
    (key, out, type, n, lo, hi, below_hi))                                                                    \
  X(random_normal, random_normal, void,                                                                       \
    (PhiloxKey key, void* out, ElementType type, int64_t n, double mean, double stddev),                      \
    (key, out, type, n, mean, stddev))                                                                        \
  X(random_bernoulli, random_bernoulli, void,                                                                 \
    (PhiloxKey key, uint8_t* out, int64_t n, double p, const double* p_values), (key, out, n, p, p_values))   \
  X(random_randint, random_randint, void,                                                                     \
    (PhiloxKey key, void* out, ElementType type, int64_t n, int64_t lo, uint64_t range),                      \
    (key, out, type, n, lo, range))                                                                           \
  X(random_categorical, random_categorical, void,                                                             \
    (PhiloxKey key, const double* table, int64_t categories, const StridedArg& rows_of_samples, int64_t* out, \
     int64_t n),                                                                                              \
    (key, table, categories, rows_of_samples, out, n))                                                        \
  X(first_outside_unit_interval, first_outside_unit_interval, int64_t, (const double* p, int64_t n), (p, n))   \
  X(first_invalid_categorical_row, first_invalid_categorical_row, CategoricalRowProblem,                      \
    (const double* table, int64_t rows, int64_t categories), (table, rows, categories))                       \
  X(reduce_rows, reduce_rows, void,                                                                           \
    (ReduceOp op, const void* x, ElementType in_type, void* out, ElementType out_type, int64_t rows,          \
     int64_t len, int64_t correction),                                                                        \
    (op, x, in_type, out, out_type, rows, len, correction))                                                   \
  X(scan_lines, scan_lines, void,                                                                             \
    (const void* x, void* y, ElementType type, int64_t outer, int64_t n, int64_t inner, bool reverse,         \
     bool discounted, double discount),                                                                       \
    (x, y, type, outer, n, inner, reverse, discounted, discount))                                             \
  X(softmax_rows, softmax_rows, void, (const void* x, void* y, ElementType type, int64_t rows, int64_t len, bool log), \
    (x, y, type, rows, len, log))                                                                             \
  X(sort_rows, sort_rows, void,                                                                               \
    (const void* x, ElementType type, int64_t rows, int64_t len, int64_t k, bool descending, void* values,    \
     int64_t* indices),                                                                                       \
    (x, type, rows, len, k, descending, values, indices))

// The cuDNN rows: null in a module built without cuDNN (the forwarders then throw).
#define CTRAX_CUDA_MODULE_CUDNN_FUNCTIONS(X)                                                                    \
  X(cudnn_library_version, cudnn_library_version, int, (), ())                                                \
  X(cudnn_softmax_rows, cudnn_softmax_rows, void,                                                             \
    (const void* x, void* y, ElementType type, int64_t rows, int64_t len, bool log), (x, y, type, rows, len, log)) \
  X(cudnn_activation, cudnn_activation, void,                                                                 \
    (CudnnActivation activation, const void* x, void* y, ElementType type, int64_t n),                        \
    (activation, x, y, type, n))                                                                              \
  X(cudnn_conv2d_forward, cudnn_conv2d_forward, void,                                                         \
    (const CudnnConv2d& conv, ElementType type, const void* x, const void* w, void* y), (conv, type, x, w, y)) \
  X(cudnn_conv2d_backward_data, cudnn_conv2d_backward_data, void,                                             \
    (const CudnnConv2d& conv, ElementType type, const void* w, const void* dy, void* dx),                     \
    (conv, type, w, dy, dx))                                                                                  \
  X(cudnn_conv2d_backward_filter, cudnn_conv2d_backward_filter, void,                                         \
    (const CudnnConv2d& conv, ElementType type, const void* x, const void* dy, void* dw),                     \
    (conv, type, x, dy, dw))

// The NCCL rows: null in a module built without NCCL (the forwarders then throw).
#define CTRAX_CUDA_MODULE_NCCL_FUNCTIONS(X)                                                                     \
  X(nccl_unique_id, nccl_unique_id, void, (unsigned char* id), (id))                                          \
  X(nccl_init, nccl_init, void*, (const unsigned char* id, int n_ranks, int rank, int device),                \
    (id, n_ranks, rank, device))                                                                              \
  X(nccl_allgather, nccl_allgather, void, (void* comm, const void* send, void* recv, int64_t count, int device), \
    (comm, send, recv, count, device))                                                                        \
  X(nccl_destroy, nccl_destroy, void, (void* comm), (comm))

namespace ctrax::kernels::cuda {

// Bumped whenever the table's layout or a row's signature changes: the loader refuses a
// module of another version (a libctrax_cuda.so left over from an older build).
inline constexpr int kModuleAbiVersion = 3;

struct ModuleTable {
  int abi_version = 0;
  size_t table_size = 0;        // sizeof(ModuleTable) in the module: a second guard
  bool cudnn_built_in = false;  // the module was built with cuDNN (the cudnn_* rows are set)
  bool nccl_built_in = false;   // the module was built with NCCL (the nccl_* rows are set)
  bool (*available)() = nullptr;
  std::string (*unavailable_reason)() = nullptr;
  int (*device_count)() = nullptr;
  void (*release_cached_memory)() = nullptr;
#define CTRAX_CUDA_MODULE_MEMBER(member, function, ret, params, args) ret(*member) params = nullptr;
  CTRAX_CUDA_MODULE_FUNCTIONS(CTRAX_CUDA_MODULE_MEMBER)
  CTRAX_CUDA_MODULE_CUDNN_FUNCTIONS(CTRAX_CUDA_MODULE_MEMBER)
  CTRAX_CUDA_MODULE_NCCL_FUNCTIONS(CTRAX_CUDA_MODULE_MEMBER)
#undef CTRAX_CUDA_MODULE_MEMBER
};

// The module's entry point, looked up with dlsym.
inline constexpr const char* kModuleEntryPoint = "ctrax_cuda_module_table";

namespace detail {
// Opens the module at `path` and returns its table (the module then stays loaded), or null
// with `why` saying what was wrong (no such file, not a module, another ABI). The loader's one
// step, exposed for tests; in the core only (kernels/cuda/loader.cpp).
const ModuleTable* open_module(const std::string& path, std::string& why);
}  // namespace detail

}  // namespace ctrax::kernels::cuda
