// dist::MpiCommunicator: see mpi_communicator.h. Nothing here links against MPI: the module
// does (dist/mpi_module.cpp).
#include "mpi_communicator.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>

#include "../base/error.h"
#include "mpi_module.h"

namespace ctrax::dist {

namespace {

constexpr const char* kSoname = "libctrax_mpi.so.0";

// Where the module may be, in the order tried (see mpi_communicator.h).
std::vector<std::string> candidate_paths() {
  std::vector<std::string> paths;
  if (const char* explicit_path = std::getenv("CTRAX_MPI_MODULE"); explicit_path && *explicit_path)
    paths.emplace_back(explicit_path);
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&candidate_paths), &info) != 0 && info.dli_fname != nullptr) {
    const std::filesystem::path here = std::filesystem::path(info.dli_fname).parent_path();
    paths.push_back((here / kSoname).string());
    paths.push_back((here / ".." / "lib" / kSoname).string());
  }
  paths.emplace_back(kSoname);
#ifdef CTRAX_MPI_MODULE_INSTALLED_FILE
  paths.emplace_back(CTRAX_MPI_MODULE_INSTALLED_FILE);
#endif
#ifdef CTRAX_MPI_MODULE_BUILD_FILE
  paths.emplace_back(CTRAX_MPI_MODULE_BUILD_FILE);
#endif
  return paths;
}

// The module's table, opened once per process. RTLD_GLOBAL: OpenMPI's own plugins resolve
// libmpi's symbols through the global scope.
const CtraxMpiModule* open_module() {
  static std::once_flag once;
  static const CtraxMpiModule* table = nullptr;
  static std::string why;
  std::call_once(once, [] {
    std::string tried;
    for (const std::string& path : candidate_paths()) {
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (handle == nullptr) {
        const char* error = dlerror();
        tried += "\n  " + path + ": " + (error ? error : "dlopen failed");
        continue;
      }
      using Entry = const CtraxMpiModule* (*)();
      auto entry = reinterpret_cast<Entry>(dlsym(handle, kCtraxMpiModuleEntryPoint));
      if (entry == nullptr || entry()->version != kCtraxMpiModuleVersion) {
        tried += "\n  " + path + ": not a ctrax MPI module of this version";
        continue;
      }
      table = entry();
      return;
    }
    why = "no MPI module (libctrax_mpi.so, built when CMake finds OpenMPI: apt-get install libopenmpi-dev "
          "openmpi-bin, then -DCTRAX_MPI=ON); tried:" + tried;
  });
  CTRAX_REQUIRE(table != nullptr, "MpiCommunicator: ", why);
  return table;
}

}  // namespace

MpiCommunicator::MpiCommunicator() : module_(open_module()) {
  char error[512] = {};
  int finalize_later = 0;
  CTRAX_REQUIRE(module_->init(&rank_, &size_, &finalize_later, error, sizeof error) == 0, "MPI: ", error);
  finalize_ = finalize_later != 0;
}

MpiCommunicator::~MpiCommunicator() {
  if (finalize_) module_->finalize();
}

std::vector<double> MpiCommunicator::allgather(std::span<const double> local) {
  std::vector<double> out(local.size() * static_cast<size_t>(size_));
  char error[512] = {};
  CTRAX_REQUIRE(module_->allgather(local.data(), local.size(), out.data(), error, sizeof error) == 0, "MPI ", error);
  return out;
}

void MpiCommunicator::barrier() {
  char error[512] = {};
  CTRAX_REQUIRE(module_->barrier(error, sizeof error) == 0, "MPI: ", error);
}

std::vector<std::string> MpiCommunicator::gather_bytes_at_root(std::string_view local) {
  const double length = static_cast<double>(local.size());
  const std::vector<double> all = allgather(std::span<const double>(&length, 1));
  std::vector<long long> lengths(all.begin(), all.end());
  long long total = 0;
  for (long long n : lengths) total += n;
  std::string joined(rank_ == 0 ? static_cast<size_t>(total) : 0, '\0');
  char error[512] = {};
  CTRAX_REQUIRE(module_->gather_bytes(local.data(), local.size(), lengths.data(), joined.data(), error,
                                      sizeof error) == 0,
                "MPI ", error);
  std::vector<std::string> out;
  if (rank_ != 0) return out;
  size_t at = 0;
  for (long long n : lengths) {
    out.push_back(joined.substr(at, static_cast<size_t>(n)));
    at += static_cast<size_t>(n);
  }
  return out;
}

void MpiCommunicator::abort_job(int exit_code) {
  module_->abort_job(exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; should it, end this rank at least
}

bool MpiCommunicator::launched_by_mpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (const char* value = std::getenv(name); value && *value) return true;
  return false;
}

}  // namespace ctrax::dist
