// Atomic file writes (see atomic_file.h): temporary file, fsync, rename, directory fsync.
#include "atomic_file.h"

#include <atomic>
#include <cerrno>
#include <mutex>
#include <set>
#include <string>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/error.h"
#include "posix_file.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace ctrax::io {

namespace {

using detail::errno_text;

// The temporaries of this process's live writers, by file name (the pid and the counter in the
// name make it unique across directories), so remove_stale_temporaries spares them. Never
// destroyed: a writer may outlive static destruction order.
struct LiveTemporaries {
  std::mutex mutex;
  std::set<std::string> names;
};
LiveTemporaries& live_temporaries() {
  static auto* live = new LiveTemporaries;
  return *live;
}
void register_live(const std::string& name) {
  std::lock_guard<std::mutex> lock(live_temporaries().mutex);
  live_temporaries().names.insert(name);
}
void unregister_live(const std::string& name) {
  std::lock_guard<std::mutex> lock(live_temporaries().mutex);
  live_temporaries().names.erase(name);
}
bool is_live(const std::string& name) {
  std::lock_guard<std::mutex> lock(live_temporaries().mutex);
  return live_temporaries().names.count(name) != 0;
}

std::atomic<uint64_t> temporary_counter{0};

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// ".<name>.tmp.<pid>.<n>" with a non-empty name and decimal pid and n.
bool is_temporary_name(const std::string& file) {
  if (file.size() < 2 || file[0] != '.') return false;
  const size_t tmp = file.rfind(".tmp.");
  if (tmp == std::string::npos || tmp < 2) return false;
  const std::string_view rest = std::string_view(file).substr(tmp + 5);
  const size_t dot = rest.find('.');
  return dot != std::string_view::npos && all_digits(rest.substr(0, dot)) && all_digits(rest.substr(dot + 1));
}

std::filesystem::path directory_of(const std::filesystem::path& path) {
  const std::filesystem::path parent = path.parent_path();
  return parent.empty() ? std::filesystem::path(".") : parent;
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::filesystem::path path) : path_(std::move(path)) {
  const std::string name = path_.filename().string();
  CTRAX_REQUIRE(!name.empty() && name != "." && name != "..", "AtomicFileWriter: ", path_.string(),
                " does not name a file");
  const std::string temporary_name = "." + name + ".tmp." + std::to_string(::getpid()) + "." +
                                     std::to_string(temporary_counter.fetch_add(1));
  temporary_path_ = directory_of(path_) / temporary_name;
  // Registered before the file exists so a concurrent remove_stale_temporaries never races it.
  register_live(temporary_name);
  fd_ = ::open(temporary_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int error = errno;
    unregister_live(temporary_name);
    CTRAX_THROW(path_.string(), ": cannot create the temporary file ", temporary_path_.string(), ": ",
                errno_text(error));
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temporary_path_.c_str());
  unregister_live(temporary_path_.filename().string());
}

namespace {
// Bytes collected before a write call (and the largest write() that is copied first).
constexpr size_t kWriteBuffer = size_t{256} << 10;
}  // namespace

// XXH3 through libxxhash's header, inlined (XXH_INLINE_ALL): nothing to link, and the
// installed ctrax needs no xxhash.
struct Xxh3Stream::State {
  XXH3_state_t xxh;
};

Xxh3Stream::Xxh3Stream() : state_(std::make_unique<State>()) { XXH3_64bits_reset(&state_->xxh); }
Xxh3Stream::~Xxh3Stream() = default;
void Xxh3Stream::update(const void* data, size_t size) { XXH3_64bits_update(&state_->xxh, data, size); }
uint64_t Xxh3Stream::digest() const { return XXH3_64bits_digest(&state_->xxh); }

uint64_t xxh3_64(const void* data, size_t size) { return XXH3_64bits(data, size); }


void AtomicFileWriter::write(const void* data, size_t size) {
  CTRAX_REQUIRE(!committed_, "AtomicFileWriter: write to ", path_.string(), " after commit()");
  CTRAX_REQUIRE(fd_ >= 0, "AtomicFileWriter: write to ", path_.string(), " after a failed write or commit");
  checksum_.update(data, size);
  written_ += size;
  const auto* in = static_cast<const char*>(data);
  if (buffer_.size() + size > kWriteBuffer) {
    flush();
    if (size > kWriteBuffer) {  // too large to be worth copying
      write_all(in, size);
      return;
    }
  }
  buffer_.insert(buffer_.end(), in, in + size);
}

void AtomicFileWriter::flush() {
  write_all(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFileWriter::write_all(const char* in, size_t size) {
  while (size > 0) {
    const size_t chunk = size < (size_t{1} << 30) ? size : (size_t{1} << 30);
    const ssize_t done = ::write(fd_, in, chunk);
    if (done < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      // Closing refuses every later write and the commit: the file would miss these bytes.
      ::close(fd_);
      fd_ = -1;
      buffer_.clear();
      CTRAX_THROW(path_.string(), ": writing ", temporary_path_.string(), " failed after ", in_file_, " bytes: ",
                  errno_text(error));
    }
    in += done;
    size -= static_cast<size_t>(done);
    in_file_ += static_cast<uint64_t>(done);
  }
}

void AtomicFileWriter::commit() {
  CTRAX_REQUIRE(!committed_, "AtomicFileWriter: commit() of ", path_.string(), " called twice");
  CTRAX_REQUIRE(fd_ >= 0, "AtomicFileWriter: commit() of ", path_.string(), " after a failed write or commit");
  flush();
  const int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    CTRAX_THROW(path_.string(), ": fsync of ", temporary_path_.string(), " failed: ", errno_text(error));
  }
  // close can report a deferred write error (NFS); a file that failed to close is not committed.
  if (::close(fd) != 0)
    CTRAX_THROW(path_.string(), ": closing ", temporary_path_.string(), " failed: ", errno_text(errno));
  if (::rename(temporary_path_.c_str(), path_.c_str()) != 0)
    CTRAX_THROW(path_.string(), ": cannot rename ", temporary_path_.string(), " over it: ", errno_text(errno));
  committed_ = true;
  unregister_live(temporary_path_.filename().string());
  sync_directory(directory_of(path_));
}

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  AtomicFileWriter writer(path);
  writer.write(contents);
  writer.commit();
}

std::string read_file(const std::filesystem::path& path, uint64_t max_bytes) {
  uint64_t size = 0;
  detail::UniqueFd fd = detail::open_for_reading(path, size);
  if (size > max_bytes)
    CTRAX_THROW(path.string(), ": the file is ", size, " bytes, more than the limit of ", max_bytes,
                " bytes for this kind of file");
  std::string contents(static_cast<size_t>(size), '\0');
  detail::pread_exact(fd.get(), contents.data(), contents.size(), 0, path);
  return contents;
}

int remove_stale_temporaries(const std::filesystem::path& directory) {
  std::error_code ec;
  if (!std::filesystem::exists(directory, ec)) return 0;
  std::filesystem::directory_iterator it(directory, ec);
  if (ec) CTRAX_THROW(directory.string(), ": cannot list the directory: ", ec.message());
  int removed = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_temporary_name(name) || is_live(name)) continue;
    if (::unlink(it->path().c_str()) != 0) {
      if (errno == ENOENT) continue;  // removed meanwhile
      CTRAX_THROW(it->path().string(), ": cannot remove this stale temporary file: ", errno_text(errno));
    }
    ++removed;
  }
  if (ec) CTRAX_THROW(directory.string(), ": cannot list the directory: ", ec.message());
  return removed;
}

void sync_directory(const std::filesystem::path& directory) {
  detail::UniqueFd fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) CTRAX_THROW(directory.string(), ": cannot open the directory to fsync it: ", errno_text(errno));
  // Some file systems cannot fsync a directory and say EINVAL; their renames are as durable as
  // they will ever be, so that is not an error.
  if (::fsync(fd.get()) != 0 && errno != EINVAL)
    CTRAX_THROW(directory.string(), ": fsync of the directory failed: ", errno_text(errno));
}

}  // namespace ctrax::io
