// A directory of numbered checkpoints: tensors in safetensors files plus a JSON manifest each;
// the durable state of anything that trains (weights, model state, optimizer slots, counters,
// rng keys) as named tensors plus a few named scalar fields. Knows nothing about models. The
// tensor file is plain safetensors, so Python can read it. Crash safety: docs/tour.md,
// "Checkpoints".
//
// Files of the checkpoint of step S (S zero-padded to 10 digits):
//   checkpoint-S.safetensors   the tensors;
//   checkpoint-S.json          the manifest: {"format": "ctrax-checkpoint", "version": 2,
//                              "step": S, "tensors_file": ..., "tensors_bytes": ...,
//                              "tensors_checksum": "<XXH3-64 of the tensor file, hex>",
//                              "fields": {...}}; version 1 (FNV-1a 64 checksums) is read too.
// Saving writes the tensor file, then the manifest, each atomically: the manifest is the commit
// point, so a crash leaves every earlier checkpoint loadable. Only after a commit are the
// checkpoints beyond the newest keep_last deleted. Loading checks the manifest, the tensor file's
// size and checksum, then its safetensors structure; any failure throws ctrax::Error naming the
// file and the reason.
#pragma once

#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "../tensor/tensor.h"
#include "atomic_file.h"

namespace ctrax::io {

// The version saves write; loads accept kOldestCheckpointFormatVersion to it.
inline constexpr int kCheckpointFormatVersion = 2;
inline constexpr int kOldestCheckpointFormatVersion = 1;

// The scalar fields a checkpoint carries besides tensors (counters, rng words, names).
using ManifestValue = std::variant<bool, int64_t, double, std::string>;
using ManifestFields = std::map<std::string, ManifestValue>;

struct Checkpoint {
  int64_t step = 0;
  std::map<std::string, Tensor> tensors;
  ManifestFields fields;
  std::filesystem::path manifest_path;

  // The field `name` as the given type; throws ctrax::Error naming the manifest, the field and
  // what it holds when it is missing or of another type.
  int64_t int_field(const std::string& name) const;
  double double_field(const std::string& name) const;  // accepts integers too
  bool bool_field(const std::string& name) const;
  const std::string& string_field(const std::string& name) const;
  // The tensor `name`; throws ctrax::Error when the checkpoint has none of that name.
  const Tensor& tensor(const std::string& name) const;
};

class CheckpointDirectory {
 public:
  // Creates `directory` (and parents) if needed; throws ctrax::Error when it cannot be created
  // or written. keep_last >= 1 checkpoints are kept. With Access::read_only nothing is created
  // or checked for writing (a missing directory holds no checkpoints), and save and
  // remove_after throw: for evaluating a run that may belong to someone else.
  enum class Access { read_write, read_only };
  explicit CheckpointDirectory(std::filesystem::path directory, int keep_last = 3,
                               Access access = Access::read_write);
  // Waits for a background save (its error, if any, is only reported on standard error here:
  // call wait() to see it as an exception).
  ~CheckpointDirectory();
  CheckpointDirectory(const CheckpointDirectory&) = delete;
  CheckpointDirectory& operator=(const CheckpointDirectory&) = delete;

  const std::filesystem::path& directory() const { return directory_; }
  int keep_last() const { return keep_last_; }

  // Saves the checkpoint of `step` (>= 0), replacing one of the same step; returns the
  // manifest's path. Removes stale temporaries and uncommitted tensor files first, and the
  // oldest checkpoints beyond keep_last after the commit.
  std::filesystem::path save(int64_t step, const std::map<std::string, Tensor>& tensors,
                             const ManifestFields& fields = {});
  // save() on a thread of its own, so that the caller goes on while the files are written and
  // synced (a save is mostly fsync waits). The tensors are copied before it returns (the caller
  // may change them at once). At most one background save runs: this and every other method
  // first wait for the previous one, and rethrow its ctrax::Error if it failed.
  void save_in_background(int64_t step, const std::map<std::string, Tensor>& tensors,
                          const ManifestFields& fields = {});
  // Waits for the background save, if any; rethrows its error.
  void wait() const;
  // Removes the committed checkpoints of steps > `step` (manifest first, so each removal is
  // atomic), e.g. when a run continues from an earlier checkpoint than its newest.
  void remove_after(int64_t step);

  // Steps of the committed checkpoints (those with a manifest), ascending.
  std::vector<int64_t> steps() const;
  std::optional<int64_t> latest_step() const;

  // Loads the checkpoint of `step`, validating everything (see above).
  Checkpoint load(int64_t step) const;
  // The newest committed checkpoint, or nullopt when there is none. A newest checkpoint that
  // fails validation throws (it is never silently skipped).
  std::optional<Checkpoint> load_latest() const;

 private:
  std::filesystem::path directory_;
  std::filesystem::path save_now(int64_t step, const std::map<std::string, Tensor>& tensors,
                                 const ManifestFields& fields);
  std::vector<int64_t> committed_steps() const;

  int keep_last_;
  Access access_;
  mutable std::thread background_;           // the background save, if one was started
  mutable std::exception_ptr background_error_;
};

}  // namespace ctrax::io
