// libctrax_mpi.so: the calls into MPI behind dist::MpiCommunicator (the table of mpi_module.h).
// Built with CTRAX_MPI; the only file of ctrax that includes mpi.h.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "mpi_module.h"

namespace {

// 0 for MPI_SUCCESS, else MPI's message after `call` in `error`.
int report(int code, const char* call, char* error, size_t error_size) {
  if (code == MPI_SUCCESS) return 0;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  std::snprintf(error, error_size, "%s failed: %.*s", call, length, text);
  return 1;
}

int init(int* rank, int* size, int* finalize_later, char* error, size_t error_size) {
  int initialized = 0;
  if (int e = report(MPI_Initialized(&initialized), "MPI_Initialized", error, error_size)) return e;
  *finalize_later = 0;
  if (!initialized) {
    int provided = 0;
    if (int e = report(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread", error,
                       error_size))
      return e;
    *finalize_later = 1;
  }
  if (int e = report(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", error,
                     error_size))
    return e;
  if (int e = report(MPI_Comm_rank(MPI_COMM_WORLD, rank), "MPI_Comm_rank", error, error_size)) return e;
  return report(MPI_Comm_size(MPI_COMM_WORLD, size), "MPI_Comm_size", error, error_size);
}

int allgather(const double* local, size_t n, double* out, char* error, size_t error_size) {
  int size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // The lengths first, so that a mismatch is reported on every rank instead of corrupting memory.
  const auto length = static_cast<long long>(n);
  std::vector<long long> lengths(static_cast<size_t>(size));
  if (int e = report(MPI_Allgather(&length, 1, MPI_LONG_LONG, lengths.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD),
                     "MPI_Allgather", error, error_size))
    return e;
  for (int r = 0; r < size; ++r)
    if (lengths[static_cast<size_t>(r)] != length) {
      std::snprintf(error, error_size,
                    "allgather: rank %d gives %lld values, rank %d %lld (every rank must give the same number)", r,
                    lengths[static_cast<size_t>(r)], rank, length);
      return 1;
    }
  if (length > (1LL << 30)) {
    std::snprintf(error, error_size, "allgather: %lld values per rank exceed MPI's int counts", length);
    return 1;
  }
  return report(MPI_Allgather(local, static_cast<int>(length), MPI_DOUBLE, out, static_cast<int>(length), MPI_DOUBLE,
                              MPI_COMM_WORLD),
                "MPI_Allgather", error, error_size);
}

int gather_bytes(const void* local, size_t length, const long long* lengths, void* out, char* error,
                 size_t error_size) {
  int size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<int> counts, displacements;
  if (rank == 0) {
    long long at = 0;
    for (int r = 0; r < size; ++r) {
      if (lengths[r] > (1LL << 31) - 1 || at > (1LL << 31) - 1) {
        std::snprintf(error, error_size, "gather: %lld bytes exceed MPI's int counts", lengths[r] + at);
        return 1;
      }
      counts.push_back(static_cast<int>(lengths[r]));
      displacements.push_back(static_cast<int>(at));
      at += lengths[r];
    }
  }
  return report(MPI_Gatherv(local, static_cast<int>(length), MPI_BYTE, out, counts.data(), displacements.data(),
                            MPI_BYTE, 0, MPI_COMM_WORLD),
                "MPI_Gatherv", error, error_size);
}

int barrier(char* error, size_t error_size) { return report(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", error, error_size); }

void abort_job(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

void finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

const CtraxMpiModule kModule{kCtraxMpiModuleVersion, init, allgather, barrier, gather_bytes, abort_job, finalize};

}  // namespace

extern "C" __attribute__((visibility("default"))) const CtraxMpiModule* ctrax_mpi_module() { return &kModule; }
