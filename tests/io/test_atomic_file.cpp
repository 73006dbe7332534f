// Atomic file writes: commit replaces, abort leaves the old file, temporaries are named and
// cleaned up as documented, and failures name the path and the reason.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <csignal>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctrax/io/atomic_file.h>
#include <ctrax/base/error.h>

#include "io/temp_dir.h"

using namespace ctrax;
using namespace ctrax::io;
using ctrax::test::list_dir;
using ctrax::test::read_bytes;
using ctrax::test::TempDir;
using ctrax::test::write_bytes;

TEST_CASE("atomic_file: write_file_atomically creates and replaces a file, leaving nothing else") {
  TempDir dir;
  const auto path = dir / "config.json";
  write_file_atomically(path, "first");
  CHECK(read_bytes(path) == "first");
  write_file_atomically(path, "second, longer");
  CHECK(read_bytes(path) == "second, longer");
  write_file_atomically(path, "");
  CHECK(read_bytes(path).empty());
  CHECK(list_dir(dir.path()) == std::vector<std::string>{"config.json"});
}

TEST_CASE("atomic_file: the writer streams into a hidden temporary and commits by rename") {
  TempDir dir;
  const auto path = dir / "data.bin";
  write_bytes(path, "old");
  const std::string expected = "new " + std::string(100000, 'x') + std::string(size_t{3} << 20, 'z') + "end";
  {
    AtomicFileWriter writer(path);
    CHECK(writer.path() == path);
    const std::string tmp = writer.temporary_path().filename().string();
    CHECK(writer.temporary_path().parent_path() == dir.path());
    CHECK(tmp.rfind(".data.bin.tmp." + std::to_string(::getpid()) + ".", 0) == 0);
    writer.write("new ");
    writer.write(std::string(100000, 'x'));
    writer.write(std::string(size_t{3} << 20, 'z'));  // larger than the buffer: written directly
    writer.write("end");
    CHECK(writer.bytes_written() == expected.size());
    CHECK(writer.checksum() == xxh3_64(expected.data(), expected.size()));
    // Until the commit, readers see the old file.
    CHECK(read_bytes(path) == "old");
    CHECK(std::filesystem::exists(writer.temporary_path()));
    writer.commit();
    CHECK_FALSE(std::filesystem::exists(writer.temporary_path()));
    CHECK_THROWS_WITH_AS(writer.commit(), doctest::Contains("called twice"), Error);
    CHECK_THROWS_WITH_AS(writer.write("more"), doctest::Contains("after commit()"), Error);
  }
  const std::string contents = read_bytes(path);  // compared by size and checksum: a diff would be 3 MB
  CHECK(contents.size() == expected.size());
  CHECK(fnv1a64(contents.data(), contents.size()) == fnv1a64(expected.data(), expected.size()));
  CHECK(list_dir(dir.path()) == std::vector<std::string>{"data.bin"});
}

TEST_CASE("atomic_file: a writer destroyed without commit leaves the old file and no temporary") {
  TempDir dir;
  const auto path = dir / "state";
  write_file_atomically(path, "committed");
  {
    AtomicFileWriter writer(path);
    writer.write("half-written");
  }
  CHECK(read_bytes(path) == "committed");
  CHECK(list_dir(dir.path()) == std::vector<std::string>{"state"});
  {
    AtomicFileWriter writer(dir / "never");  // nothing written at all
  }
  CHECK(list_dir(dir.path()) == std::vector<std::string>{"state"});
}

TEST_CASE("atomic_file: remove_stale_temporaries removes leftovers only, sparing live writers") {
  TempDir dir;
  for (const char* name : {".a.tmp.123.0", ".ckpt.json.tmp.99999.17", ".x.tmp.1.2"}) write_bytes(dir / name, "stale");
  // Names that only look similar.
  const std::vector<std::string> keep = {"a.tmp.1.2", ".a.tmp.", ".a.tmp.1", ".a.tmp.x.2", ".a.tmp.1.2x", ".tmp.1.2", "plain"};
  for (const std::string& name : keep) write_bytes(dir / name, "keep");
  AtomicFileWriter live(dir / "live");
  live.write("in progress");
  CHECK(remove_stale_temporaries(dir.path()) == 3);
  std::vector<std::string> expected = keep;
  expected.push_back(live.temporary_path().filename().string());
  std::sort(expected.begin(), expected.end());
  CHECK(list_dir(dir.path()) == expected);
  live.commit();
  CHECK(read_bytes(dir / "live") == "in progress");
  CHECK(remove_stale_temporaries(dir.path()) == 0);
  CHECK(remove_stale_temporaries(dir / "does-not-exist") == 0);
}

TEST_CASE("atomic_file: read_file reads whole files and enforces its limit") {
  TempDir dir;
  const std::string big(300000, 'b');
  write_bytes(dir / "f", big);
  CHECK(read_file(dir / "f") == big);
  CHECK(read_file(dir / "f", 300000) == big);
  CHECK_THROWS_WITH_AS(read_file(dir / "f", 299999),
                       doctest::Contains("the file is 300000 bytes, more than the limit of 299999 bytes"), Error);
  write_bytes(dir / "empty", "");
  CHECK(read_file(dir / "empty", 0).empty());
  CHECK_THROWS_WITH_AS(read_file(dir / "missing"), doctest::Contains(((dir / "missing").string() + ": cannot open").c_str()), Error);
  CHECK_THROWS_WITH_AS(read_file(dir.path()), doctest::Contains("not a regular file"), Error);
}

TEST_CASE("atomic_file: failures name the path and the system's reason") {
  TempDir dir;
  // A directory that does not exist.
  const auto missing = dir / "no" / "file";
  CHECK_THROWS_WITH_AS(write_file_atomically(missing, "x"), doctest::Contains("No such file or directory"), Error);
  CHECK_THROWS_WITH_AS(write_file_atomically(missing, "x"), doctest::Contains(missing.c_str()), Error);
  // A "directory" that is a regular file: fails even for root.
  write_bytes(dir / "regular", "I am a file");
  CHECK_THROWS_WITH_AS(AtomicFileWriter(dir / "regular" / "f"), doctest::Contains("Not a directory"), Error);
  // A path that names no file.
  CHECK_THROWS_WITH_AS(AtomicFileWriter(dir.path() / ""), doctest::Contains("does not name a file"), Error);
  CHECK_THROWS_WITH_AS(sync_directory(dir / "no"), doctest::Contains("cannot open the directory"), Error);
  // A read-only directory (root ignores permissions, so the check is skipped for root).
  const auto locked = dir / "locked";
  std::filesystem::create_directory(locked);
  write_file_atomically(locked / "kept", "old");
  std::filesystem::permissions(locked, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  if (::geteuid() == 0) {
    MESSAGE("running as root: permissions do not stop root, so the read-only directory check is skipped");
  } else {
    CHECK_THROWS_WITH_AS(write_file_atomically(locked / "kept", "new"), doctest::Contains("Permission denied"), Error);
    CHECK(read_bytes(locked / "kept") == "old");
  }
  std::filesystem::permissions(locked, std::filesystem::perms::owner_all);
  CHECK(list_dir(locked) == std::vector<std::string>{"kept"});
}

TEST_CASE("atomic_file: a failed write or rename refuses the commit and leaves the old file") {
  TempDir dir;
  const auto path = dir / "f";
  write_file_atomically(path, "old");
  {
    // The rename fails when the temporary has gone.
    AtomicFileWriter writer(path);
    writer.write("partial");
    std::filesystem::remove(writer.temporary_path());
    CHECK_THROWS_WITH_AS(writer.commit(), doctest::Contains("cannot rename"), Error);
    CHECK_THROWS_WITH_AS(writer.write("more"), doctest::Contains("after a failed write or commit"), Error);
  }
  CHECK(read_bytes(path) == "old");

  // A write fails (like a full disk) under a file size limit, set in a child process so the
  // limit does not touch the rest of the suite. The child reports through its exit status.
  // Writes are buffered (atomic_file.h), so a small one fails when commit() writes it.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int status = 0;
    try {
      ::signal(SIGXFSZ, SIG_IGN);  // then writes past the limit fail with EFBIG
      const rlimit limit{1000, 1000};
      ::setrlimit(RLIMIT_FSIZE, &limit);
      // A small write is buffered: the commit writes it, fails, and refuses to rename.
      AtomicFileWriter writer(path);
      writer.write(std::string(5000, 'x'));
      try {
        writer.commit();
        status = 10;  // the commit should have failed
      } catch (const Error& e) {
        if (std::string(e.what()).find("File too large") == std::string::npos) status = 11;
      }
      try {
        writer.write("more");
        status = 12;
      } catch (const Error& e) {
        if (std::string(e.what()).find("after a failed write") == std::string::npos) status = 13;
      }
      // A write larger than the buffer goes to the file at once, and fails at once.
      AtomicFileWriter large(path);
      try {
        large.write(std::string(size_t{3} << 20, 'y'));
        status = 15;
      } catch (const Error& e) {
        if (std::string(e.what()).find("File too large") == std::string::npos) status = 16;
      }
      try {
        large.commit();
        status = 17;
      } catch (const Error& e) {
        if (std::string(e.what()).find("after a failed write") == std::string::npos) status = 18;
      }
    } catch (...) {
      status = 14;
    }
    ::_exit(status);
  }
  int status = -1;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(read_bytes(path) == "old");
  CHECK(list_dir(dir.path()) == std::vector<std::string>{"f"});
}

TEST_CASE("atomic_file: a FIFO, a device or a directory is refused before anything is read, without blocking") {
  TempDir dir;
  const std::filesystem::path fifo = dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  // Opening a FIFO with no writer would block a plain reader forever; here it is refused at once.
  CHECK_THROWS_WITH_AS(read_file(fifo), doctest::Contains("not a regular file (it is a FIFO (named pipe))"), Error);
  CHECK_THROWS_WITH_AS(read_file("/dev/zero"), doctest::Contains("not a regular file (it is a character device)"), Error);
  CHECK_THROWS_WITH_AS(read_file(dir.path()), doctest::Contains("not a regular file (it is a directory)"), Error);
  const std::filesystem::path loop = dir / "loop";
  std::filesystem::create_symlink(loop, loop);
  CHECK_THROWS_WITH_AS(read_file(loop), doctest::Contains("Too many levels of symbolic links"), Error);
}
