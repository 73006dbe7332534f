// The MPI module's interface: the table of C functions that libctrax_mpi.so hands the core.
//
// What it is for: a program that never runs under mpirun must not load MPI, even from a build
// that compiled it (OpenMPI's libraries add start-up time and memory to every `ctrax --help`).
// So the calls into MPI live in their own shared library, which dist/mpi_communicator.cpp opens
// with dlopen the first time an MpiCommunicator is made (kernels/cuda/module.h does the same for
// CUDA). The module exports one C symbol, ctrax_mpi_module; it needs nothing from the core.
// Each function returns 0 on success, or writes a NUL-terminated message into `error` (of
// `error_size` bytes) and returns nonzero.
//
// What it is not for: public API (not installed); programs use dist::MpiCommunicator.
#pragma once

#include <cstddef>

extern "C" {

struct CtraxMpiModule {
  int version;  // kCtraxMpiModuleVersion of the module's build
  // Initialises MPI unless the program already did (then *finalize_later = 0), and sets
  // MPI_ERRORS_RETURN on MPI_COMM_WORLD.
  int (*init)(int* rank, int* size, int* finalize_later, char* error, size_t error_size);
  // Every rank's n doubles into out (n * size of them), after checking that every rank gives n.
  int (*allgather)(const double* local, size_t n, double* out, char* error, size_t error_size);
  int (*barrier)(char* error, size_t error_size);
  // MPI_Gatherv of bytes to rank 0: every rank's `length` bytes; at rank 0, lengths[r] (of every
  // rank r, each < 2^31) and `out` with room for their sum, filled in rank order.
  int (*gather_bytes)(const void* local, size_t length, const long long* lengths, void* out, char* error,
                      size_t error_size);
  // MPI_Abort(MPI_COMM_WORLD, code): ends every rank of the job.
  void (*abort_job)(int code);
  void (*finalize)();
};

}  // extern "C"

inline constexpr int kCtraxMpiModuleVersion = 2;
inline constexpr const char* kCtraxMpiModuleEntryPoint = "ctrax_mpi_module";
