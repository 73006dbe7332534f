// Small POSIX file helpers shared by the io/ sources: an owning file descriptor and read/write
// loops that retry on EINTR and short transfers and throw ctrax::Error naming the path and the
// system's reason.
//
// What it is for: the implementation of io/ (atomic_file.cpp, safetensors.cpp, checkpoint.cpp).
// What it is not for: users; it is not part of the API and may change with them.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/error.h"

namespace ctrax::io::detail {

inline std::string errno_text(int error) { return std::system_category().message(error); }

// Owns a file descriptor; closes it (ignoring errors: only read-only or already-failed
// descriptors are closed this way) when destroyed.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// What a file that is not a regular one is, for messages ("a directory", "a FIFO", ...).
inline const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "of another kind";
}

// Opens a regular file for reading and returns it with its size. The file is opened
// non-blocking and its type checked before anything is read, so a FIFO, a device or a
// directory in its place is refused at once instead of blocking a reader forever (or reading
// /dev/zero until memory runs out); then the descriptor is made blocking again.
inline UniqueFd open_for_reading(const std::filesystem::path& path, uint64_t& size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) CTRAX_THROW(path.string(), ": cannot open for reading: ", errno_text(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) CTRAX_THROW(path.string(), ": cannot stat: ", errno_text(errno));
  if (!S_ISREG(st.st_mode)) CTRAX_THROW(path.string(), ": not a regular file (it is ", file_kind(st.st_mode), ")");
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0)
    CTRAX_THROW(path.string(), ": cannot make the descriptor blocking: ", errno_text(errno));
  size = static_cast<uint64_t>(st.st_size);
  return fd;
}

// Reads exactly `size` bytes at `offset`; a file that ends first (it shrank after it was
// measured) is an error, as is any I/O failure.
inline void pread_exact(int fd, void* data, size_t size, uint64_t offset, const std::filesystem::path& path) {
  auto* out = static_cast<char*>(data);
  while (size > 0) {
    // Linux transfers at most about 2 GiB per call; ask for less so the count never misleads.
    const size_t chunk = size < (size_t{1} << 30) ? size : (size_t{1} << 30);
    const ssize_t got = ::pread(fd, out, chunk, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      CTRAX_THROW(path.string(), ": read failed at byte ", offset, ": ", errno_text(errno));
    }
    if (got == 0)
      CTRAX_THROW(path.string(), ": the file ended at byte ", offset, " while ", size,
                  " more bytes were expected (it changed while being read?)");
    out += got;
    size -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

}  // namespace ctrax::io::detail
