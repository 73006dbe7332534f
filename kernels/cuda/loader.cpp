// The core's side of kernels/cuda/module.h: finds libctrax_cuda.so the first time a CUDA device
// is asked for, and defines every kernels::cuda function as a call through its table. Nothing
// here links against CUDA: a program that never asks for a GPU never loads the module, nor
// cudart, cuBLAS or cuDNN behind it.
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "backend.h"
#include "module.h"

namespace ctrax::kernels::cuda {

namespace {

constexpr const char* kSoname = "libctrax_cuda.so.0";

struct Loaded {
  const ModuleTable* table = nullptr;
  std::string path;    // the file it came from
  std::string reason;  // why there is no table
};

// Where the module may be, in the order tried (after a module the program linked, which load()
// finds by its soname). The build passes its own locations as private definitions: the
// installed file and the build tree's.
std::vector<std::string> candidate_paths() {
  std::vector<std::string> paths;
  if (const char* explicit_path = std::getenv("CTRAX_CUDA_MODULE"); explicit_path && *explicit_path)
    paths.emplace_back(explicit_path);
  // Beside the object holding this code: libctrax.so's folder, or the program's for a static
  // libctrax (and its ../lib, for an installed bin/ctrax).
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&candidate_paths), &info) != 0 && info.dli_fname != nullptr) {
    const std::filesystem::path here = std::filesystem::path(info.dli_fname).parent_path();
    paths.push_back((here / kSoname).string());
#ifdef CTRAX_CUDA_MODULE_LIBDIR_NAME
    paths.push_back((here / ".." / CTRAX_CUDA_MODULE_LIBDIR_NAME / kSoname).string());
#endif
  }
  paths.emplace_back(kSoname);  // the dynamic loader's own search (LD_LIBRARY_PATH, RUNPATH, cache)
#ifdef CTRAX_CUDA_MODULE_INSTALLED_FILE
  paths.emplace_back(CTRAX_CUDA_MODULE_INSTALLED_FILE);
#endif
#ifdef CTRAX_CUDA_MODULE_BUILD_FILE
  paths.emplace_back(CTRAX_CUDA_MODULE_BUILD_FILE);
#endif
  return paths;
}

// The table of an opened module, or null with `why` filled.
const ModuleTable* table_of(void* handle, std::string& why) {
  using Entry = const ModuleTable* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kModuleEntryPoint));
  if (entry == nullptr) {
    why = ::ctrax::detail::cat("it has no ", kModuleEntryPoint, " (not a ctrax CUDA module)");
    return nullptr;
  }
  const ModuleTable* table = entry();
  if (table == nullptr || table->abi_version != kModuleAbiVersion || table->table_size != sizeof(ModuleTable)) {
    why = ::ctrax::detail::cat("it was built for another version of ctrax (module ABI ",
                               table ? table->abi_version : -1, ", expected ", kModuleAbiVersion, ")");
    return nullptr;
  }
  return table;
}

}  // namespace

namespace detail {

const ModuleTable* open_module(const std::string& path, std::string& why) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    why = error ? error : "dlopen failed";
    return nullptr;
  }
  const ModuleTable* table = table_of(handle, why);
  if (table == nullptr) dlclose(handle);
  return table;  // a module stays loaded for the life of the process
}

}  // namespace detail

namespace {

Loaded load() {
  Loaded result;
#ifndef CTRAX_CUDA_MODULE_BUILD_FILE
  // This build made no module; one may still be named explicitly (CTRAX_CUDA_MODULE).
  const char* explicit_path = std::getenv("CTRAX_CUDA_MODULE");
  if (explicit_path == nullptr || *explicit_path == '\0') {
    result.reason = "this build of ctrax has no CUDA backend (configure with -DCTRAX_CUDA=ON on a machine with nvcc)";
    return result;
  }
#endif
  // Linked into the program already (ctrax::cuda): no search.
  if (void* handle = dlopen(kSoname, RTLD_NOW | RTLD_NOLOAD)) {
    std::string why;
    if ((result.table = table_of(handle, why))) {
      result.path = kSoname;
      return result;
    }
  }
  std::string tried;
  for (const std::string& path : candidate_paths()) {
    std::string why;
    if ((result.table = detail::open_module(path, why))) {
      result.path = path;
      return result;
    }
    tried += ::ctrax::detail::cat("\n  ", path, ": ", why);
  }
  result.reason = ::ctrax::detail::cat(
      "the CUDA backend (", kSoname, ") could not be loaded; link ctrax::cuda, or set CTRAX_CUDA_MODULE to its path. Tried:",
      tried);
  return result;
}

const Loaded& loaded() {
  static const Loaded result = load();  // once per process, thread-safe
  return result;
}

// Set by the first question that needs the module, so that module_loaded() itself loads nothing.
std::atomic<bool>& load_attempted() {
  static std::atomic<bool> attempted{false};
  return attempted;
}

const Loaded& load_on_first_use() {
  std::atomic<bool>& attempted = load_attempted();
  if (!attempted.load(std::memory_order_relaxed)) attempted.store(true, std::memory_order_relaxed);
  return loaded();
}

const ModuleTable& module() {
  const Loaded& l = load_on_first_use();
  CTRAX_REQUIRE(l.table != nullptr, "no CUDA backend: ", l.reason);
  return *l.table;
}

}  // namespace

// ---- Answered here when the module is missing ----------------------------------------------

bool module_loaded() {
  if (load_attempted()) return loaded().table != nullptr;
  // Not asked for yet: in the process only if the program linked it (ctrax::cuda).
  void* handle = dlopen(kSoname, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  dlclose(handle);  // drops the reference RTLD_NOLOAD took
  return true;
}

std::string module_path() { return load_attempted() && loaded().table ? loaded().path : std::string(); }

bool available() {
  const Loaded& l = load_on_first_use();
  return l.table != nullptr && l.table->available();
}

std::string unavailable_reason() {
  const Loaded& l = load_on_first_use();
  return l.table == nullptr ? l.reason : l.table->unavailable_reason();
}

int device_count() {
  const Loaded& l = load_on_first_use();
  return l.table == nullptr ? 0 : l.table->device_count();
}

void release_cached_memory() {
  if (load_attempted() && loaded().table) loaded().table->release_cached_memory();  // else nothing is cached
}

bool cudnn_built_in() {
  const Loaded& l = load_on_first_use();
  return l.table != nullptr && l.table->cudnn_built_in;
}

// ---- Everything else: through the table ------------------------------------------------------

#define CTRAX_CUDA_FORWARD(member, function, ret, params, args) \
  ret function params { return module().member args; }
CTRAX_CUDA_MODULE_FUNCTIONS(CTRAX_CUDA_FORWARD)
#undef CTRAX_CUDA_FORWARD

// cuDNN rows are null in a module built without it; backend.cpp lets no call through then.
#define CTRAX_CUDA_FORWARD_CUDNN(member, function, ret, params, args)                              \
  ret function params {                                                                            \
    const ModuleTable& m = module();                                                               \
    CTRAX_REQUIRE(m.member != nullptr, #function ": the CUDA backend was built without cuDNN");  \
    return m.member args;                                                                          \
  }
CTRAX_CUDA_MODULE_CUDNN_FUNCTIONS(CTRAX_CUDA_FORWARD_CUDNN)
#undef CTRAX_CUDA_FORWARD_CUDNN

bool nccl_built_in() {
  const Loaded& l = load_on_first_use();
  return l.table != nullptr && l.table->nccl_built_in;
}

// NCCL rows are null in a module built without it (optim/nccl_allreduce.h asks nccl_built_in()).
#define CTRAX_CUDA_FORWARD_NCCL(member, function, ret, params, args)                              \
  ret function params {                                                                           \
    const ModuleTable& m = module();                                                              \
    CTRAX_REQUIRE(m.member != nullptr, #function ": the CUDA backend was built without NCCL");   \
    return m.member args;                                                                         \
  }
CTRAX_CUDA_MODULE_NCCL_FUNCTIONS(CTRAX_CUDA_FORWARD_NCCL)
#undef CTRAX_CUDA_FORWARD_NCCL

}  // namespace ctrax::kernels::cuda
