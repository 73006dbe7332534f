// Checkpoint directories (see checkpoint.h).
//
// The crash-safety argument, step by step, for save(S):
//   1. stale temporaries and tensor files without a manifest are removed (left by a crash);
//   2. if a checkpoint of step S exists, its manifest is removed first (and the removal made
//      durable): its tensor file is about to be replaced, and a manifest must never describe a
//      tensor file it was not written for. A crash from here on loses only step S, which is
//      being replaced anyway; every other checkpoint is untouched;
//   3. the tensor file is written atomically (a crash leaves a temporary or a complete file
//      without a manifest: step 1 of the next save removes either);
//   4. the manifest, with the tensor file's size and checksum, is written atomically: the
//      commit point;
//   5. only then are the oldest checkpoints beyond keep_last removed, manifest first, so a
//      crash half-way leaves at worst a tensor file without a manifest.
#include "checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "../base/error.h"
#include "atomic_file.h"
#include "posix_file.h"
#include "safetensors.h"

namespace ctrax::io {

namespace {

using json = nlohmann::json;
using detail::errno_text;

constexpr const char* kFormat = "ctrax-checkpoint";
constexpr uint64_t kMaxManifestBytes = 16u << 20;  // fields are a few scalars; this is generous

std::string stem(int64_t step) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "checkpoint-%010lld", static_cast<long long>(step));
  return buffer;
}
std::string manifest_name(int64_t step) { return stem(step) + ".json"; }
std::string tensors_name(int64_t step) { return stem(step) + ".safetensors"; }

// The step of "checkpoint-<digits><suffix>" when the digits are exactly what stem() writes
// (so "checkpoint-7.json" or "checkpoint-0000000007x.json" are foreign files, not step 7).
std::optional<int64_t> step_of(const std::string& file, const std::string& suffix) {
  const std::string prefix = "checkpoint-";
  if (file.size() <= prefix.size() + suffix.size() || file.compare(0, prefix.size(), prefix) != 0 ||
      file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  const std::string digits = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
  int64_t step = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc() || end != digits.data() + digits.size() || step < 0) return std::nullopt;
  if (stem(step) + suffix != file) return std::nullopt;
  return step;
}

std::vector<std::string> list_names(const std::filesystem::path& directory) {
  std::vector<std::string> names;
  std::error_code ec;
  std::filesystem::directory_iterator it(directory, ec);
  if (ec) CTRAX_THROW(directory.string(), ": cannot list the checkpoint directory: ", ec.message());
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) names.push_back(it->path().filename().string());
  if (ec) CTRAX_THROW(directory.string(), ": cannot list the checkpoint directory: ", ec.message());
  return names;
}

void remove_file(const std::filesystem::path& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    CTRAX_THROW(path.string(), ": cannot remove: ", errno_text(errno));
}

// Size and checksum of a whole file, read in chunks (never the whole file at once): XXH3-64
// for format version 2, FNV-1a 64 for version 1.
std::pair<uint64_t, uint64_t> size_and_checksum(const std::filesystem::path& path, int64_t version) {
  uint64_t size = 0;
  const detail::UniqueFd fd = detail::open_for_reading(path, size);
  // At most 1 MiB at a time, and not zeroed first: pread fills what is hashed (a checkpoint's
  // save spent a fifth of its instructions clearing a 1 MiB buffer for a 400 KB file).
  const size_t capacity = static_cast<size_t>(std::min<uint64_t>(size, uint64_t{1} << 20));
  const std::unique_ptr<char[]> buffer = std::make_unique_for_overwrite<char[]>(std::max<size_t>(capacity, 1));
  uint64_t fnv = 0xcbf29ce484222325ULL;  // fnv1a64's default seed
  Xxh3Stream xxh3;
  for (uint64_t offset = 0; offset < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(capacity, size - offset));
    detail::pread_exact(fd.get(), buffer.get(), n, offset, path);
    if (version >= 2) xxh3.update(buffer.get(), n);
    else fnv = fnv1a64(buffer.get(), n, fnv);
    offset += n;
  }
  return {size, version >= 2 ? xxh3.digest() : fnv};
}

std::string hex64(uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

const char* kind_of(const ManifestValue& v) {
  switch (v.index()) {
    case 0: return "a bool";
    case 1: return "an integer";
    case 2: return "a double";
    default: return "a string";
  }
}

const char* json_kind(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_float: return "a float";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    default: return "binary data";
  }
}

// Thrown from the parser callback to stop a manifest nested deeper than any valid one.
struct TooDeep {};

// Validation of a parsed manifest; each failure names the manifest and the key.
class ManifestReader {
 public:
  ManifestReader(const json& root, const std::filesystem::path& path) : root_(root), path_(path.string()) {}

  [[noreturn]] void fail(const std::string& reason) const { throw Error(path_ + ": " + reason); }

  const json& get(const char* key) const {
    const auto it = root_.find(key);
    if (it == root_.end()) fail(std::string("the manifest has no \"") + key + "\"");
    return *it;
  }
  std::string string(const char* key) const {
    const json& v = get(key);
    if (!v.is_string()) fail(std::string("\"") + key + "\" is " + json_kind(v) + ", expected a string");
    return v.get<std::string>();
  }
  int64_t integer(const char* key) const {
    const json& v = get(key);
    if (!v.is_number_integer()) fail(std::string("\"") + key + "\" is " + json_kind(v) + ", expected an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail(std::string("\"") + key + "\" is " + v.dump() + ", larger than 2^63 - 1");
    return v.get<int64_t>();
  }
  uint64_t unsigned_integer(const char* key) const {
    const json& v = get(key);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      fail(std::string("\"") + key + "\" is " + json_kind(v) + ", expected a non-negative integer");
    return v.get<uint64_t>();
  }

 private:
  const json& root_;
  std::string path_;
};

}  // namespace

// ---- Checkpoint -----------------------------------------------------------------------------

namespace {
const ManifestValue& field_of(const Checkpoint& c, const std::string& name) {
  const auto it = c.fields.find(name);
  if (it == c.fields.end()) CTRAX_THROW(c.manifest_path.string(), ": the checkpoint has no field '", name, "'");
  return it->second;
}
[[noreturn]] void wrong_kind(const Checkpoint& c, const std::string& name, const char* wanted) {
  CTRAX_THROW(c.manifest_path.string(), ": field '", name, "' holds ", kind_of(field_of(c, name)), ", not ", wanted);
}
}  // namespace

int64_t Checkpoint::int_field(const std::string& name) const {
  const ManifestValue& v = field_of(*this, name);
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  wrong_kind(*this, name, "an integer");
}
double Checkpoint::double_field(const std::string& name) const {
  const ManifestValue& v = field_of(*this, name);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  wrong_kind(*this, name, "a double");
}
bool Checkpoint::bool_field(const std::string& name) const {
  const ManifestValue& v = field_of(*this, name);
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  wrong_kind(*this, name, "a bool");
}
const std::string& Checkpoint::string_field(const std::string& name) const {
  const ManifestValue& v = field_of(*this, name);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  wrong_kind(*this, name, "a string");
}
const Tensor& Checkpoint::tensor(const std::string& name) const {
  const auto it = tensors.find(name);
  if (it == tensors.end()) CTRAX_THROW(manifest_path.string(), ": the checkpoint has no tensor '", name, "'");
  return it->second;
}

// ---- CheckpointDirectory --------------------------------------------------------------------

CheckpointDirectory::CheckpointDirectory(std::filesystem::path directory, int keep_last, Access access)
    : directory_(std::move(directory)), keep_last_(keep_last), access_(access) {
  CTRAX_REQUIRE(keep_last_ >= 1, "CheckpointDirectory(", directory_.string(), "): keep_last must be >= 1, got ",
                keep_last_);
  std::error_code ec;
  if (std::filesystem::exists(directory_, ec) && !std::filesystem::is_directory(directory_, ec))
    CTRAX_THROW(directory_.string(), ": the checkpoint directory path exists but is not a directory");
  if (access_ == Access::read_only) return;
  std::filesystem::create_directories(directory_, ec);
  if (ec) CTRAX_THROW(directory_.string(), ": cannot create the checkpoint directory: ", ec.message());
  if (::access(directory_.c_str(), W_OK | X_OK) != 0)
    CTRAX_THROW(directory_.string(), ": the checkpoint directory is not writable: ", errno_text(errno));
}

CheckpointDirectory::~CheckpointDirectory() {
  try {
    wait();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ctrax: a background checkpoint save failed: %s\n", e.what());
  }
}

void CheckpointDirectory::wait() const {
  if (background_.joinable()) background_.join();
  if (background_error_) std::rethrow_exception(std::exchange(background_error_, nullptr));
}

void CheckpointDirectory::save_in_background(int64_t step, const std::map<std::string, Tensor>& tensors,
                                             const ManifestFields& fields) {
  wait();
  CTRAX_REQUIRE(access_ == Access::read_write, "CheckpointDirectory::save_in_background(", directory_.string(),
                "): the directory was opened read-only");
  // Copies that nothing else references: the caller's tensors may change while the thread
  // writes. (A device tensor is copied to the CPU; save() refuses nothing else on that count.)
  std::map<std::string, Tensor> copies;
  for (const auto& [name, t] : tensors) copies.emplace(name, t.defined() ? t.to(Device::cpu()).clone() : t);
  background_ = std::thread([this, step, copies = std::move(copies), fields]() mutable {
    try {
      save_now(step, copies, fields);
    } catch (...) {
      background_error_ = std::current_exception();
    }
    copies.clear();  // freed on this thread, before the join
  });
}

std::vector<int64_t> CheckpointDirectory::steps() const {
  wait();
  return committed_steps();
}

std::vector<int64_t> CheckpointDirectory::committed_steps() const {
  std::vector<int64_t> steps;
  std::error_code ec;
  if (access_ == Access::read_only && !std::filesystem::exists(directory_, ec)) return steps;
  for (const std::string& name : list_names(directory_))
    if (const auto step = step_of(name, ".json")) steps.push_back(*step);
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::optional<int64_t> CheckpointDirectory::latest_step() const {
  const std::vector<int64_t> all = steps();
  if (all.empty()) return std::nullopt;
  return all.back();
}

std::filesystem::path CheckpointDirectory::save(int64_t step, const std::map<std::string, Tensor>& tensors,
                                                const ManifestFields& fields) {
  wait();
  return save_now(step, tensors, fields);
}

std::filesystem::path CheckpointDirectory::save_now(int64_t step, const std::map<std::string, Tensor>& tensors,
                                                    const ManifestFields& fields) {
  const std::string context = "CheckpointDirectory::save(" + directory_.string() + ", step " + std::to_string(step) + ")";
  CTRAX_REQUIRE(access_ == Access::read_write, context, ": the directory was opened read-only");
  CTRAX_REQUIRE(step >= 0, context, ": the step must be >= 0");
  // Everything that can be refused is refused before the directory is touched (step 2 below
  // removes the old checkpoint of this step).
  json fields_json = json::object();
  for (const auto& [name, value] : fields) {
    CTRAX_REQUIRE(!name.empty(), context, ": a field has an empty name");
    if (const auto* d = std::get_if<double>(&value)) {
      CTRAX_REQUIRE(std::isfinite(*d), context, ": field '", name, "' is ", *d, "; JSON holds only finite numbers");
      fields_json[name] = *d;
    } else if (const auto* b = std::get_if<bool>(&value)) {
      fields_json[name] = *b;
    } else if (const auto* i = std::get_if<int64_t>(&value)) {
      fields_json[name] = *i;
    } else {
      fields_json[name] = std::get<std::string>(value);
    }
  }
  for (const auto& [name, t] : tensors) {
    CTRAX_REQUIRE(!name.empty() && name != "__metadata__", context, ": the tensor name '", name, "' is not allowed");
    CTRAX_REQUIRE(t.defined(), context, ": tensor '", name, "' is undefined");
    CTRAX_REQUIRE(t.device().is_cpu(), context, ": tensor '", name, "' is on ", t.device(), ", not the CPU");
  }
  try {
    (void)fields_json.dump();
    for (const auto& [name, t] : tensors) (void)json(name).dump();
  } catch (const json::exception&) {
    CTRAX_THROW(context, ": a field or tensor name or a string field is not valid UTF-8");
  }

  // 1. Leftovers of an interrupted save.
  remove_stale_temporaries(directory_);
  const std::vector<std::string> names = list_names(directory_);
  for (const std::string& name : names) {
    const auto s = step_of(name, ".safetensors");
    if (s && std::find(names.begin(), names.end(), manifest_name(*s)) == names.end()) remove_file(directory_ / name);
  }
  // 2. Un-commit the checkpoint being replaced.
  const std::filesystem::path manifest_path = directory_ / manifest_name(step);
  const std::filesystem::path tensors_path = directory_ / tensors_name(step);
  if (std::find(names.begin(), names.end(), manifest_name(step)) != names.end()) {
    remove_file(manifest_path);
    sync_directory(directory_);
  }
  // 3. The tensors.
  const auto [size, checksum] =
      save_safetensors(tensors_path, tensors, {{"format", kFormat}, {"step", std::to_string(step)}});
  // 4. The manifest: the commit point.
  nlohmann::ordered_json manifest;
  manifest["format"] = kFormat;
  manifest["version"] = kCheckpointFormatVersion;
  manifest["step"] = step;
  manifest["tensors_file"] = tensors_name(step);
  manifest["tensors_bytes"] = size;
  manifest["tensors_checksum"] = hex64(checksum);
  manifest["fields"] = std::move(fields_json);
  write_file_atomically(manifest_path, manifest.dump(2) + "\n");
  // 5. Old checkpoints beyond keep_last, oldest first; never the one just saved (a save of a
  // step below the others, e.g. after rolling back, must not delete itself).
  std::vector<int64_t> others = committed_steps();
  others.erase(std::remove(others.begin(), others.end(), step), others.end());
  const size_t keep_others = static_cast<size_t>(keep_last_ - 1);
  if (others.size() > keep_others) {
    // No directory fsync: a removal a crash undoes leaves an older checkpoint behind, which
    // is still valid and which the next save removes again (an fsync is about 0.4 ms here).
    for (size_t i = 0; i < others.size() - keep_others; ++i) {
      remove_file(directory_ / manifest_name(others[i]));
      remove_file(directory_ / tensors_name(others[i]));
    }
  }
  return manifest_path;
}

void CheckpointDirectory::remove_after(int64_t step) {
  wait();
  CTRAX_REQUIRE(access_ == Access::read_write, "CheckpointDirectory::remove_after(", directory_.string(),
                "): the directory was opened read-only");
  bool removed = false;
  for (int64_t s : steps()) {
    if (s <= step) continue;
    remove_file(directory_ / manifest_name(s));  // the commit point goes first
    std::error_code ec;
    if (std::filesystem::exists(directory_ / tensors_name(s), ec)) remove_file(directory_ / tensors_name(s));
    removed = true;
  }
  if (removed) sync_directory(directory_);
}

Checkpoint CheckpointDirectory::load(int64_t step) const {
  wait();
  const std::filesystem::path manifest_path = directory_ / manifest_name(step);
  std::error_code ec;
  if (!std::filesystem::exists(manifest_path, ec))
    CTRAX_THROW(manifest_path.string(), ": no checkpoint of step ", step, " in ", directory_.string(),
                " (the manifest does not exist)");
  const std::string text = read_file(manifest_path, kMaxManifestBytes);

  // A valid manifest nests two levels deep (the root, "fields"); deeper is refused while parsing
  // so a hostile file cannot make the parser build a deep tree.
  json root;
  try {
    root = json::parse(text, [](int depth, json::parse_event_t, json&) {
      if (depth > 2) throw TooDeep{};
      return true;
    });
  } catch (const TooDeep&) {
    CTRAX_THROW(manifest_path.string(), ": the manifest nests deeper than a checkpoint manifest does");
  } catch (const json::exception& e) {
    CTRAX_THROW(manifest_path.string(), ": the manifest is not valid JSON: ", e.what());
  }
  if (!root.is_object()) CTRAX_THROW(manifest_path.string(), ": the manifest is ", json_kind(root), ", not a JSON object");
  const ManifestReader m(root, manifest_path);
  static const char* const kKeys[] = {"format", "version", "step", "tensors_file", "tensors_bytes", "tensors_checksum", "fields"};
  for (const auto& item : root.items())
    if (std::find_if(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return item.key() == k; }) == std::end(kKeys))
      m.fail("the manifest has the unknown key \"" + item.key() + "\"");

  const std::string format = m.string("format");
  if (format != kFormat) m.fail("the format is \"" + format + "\", expected \"" + kFormat + "\"");
  const int64_t version = m.integer("version");
  if (version < kOldestCheckpointFormatVersion || version > kCheckpointFormatVersion)
    m.fail("the format version is " + std::to_string(version) + "; this build reads versions " +
           std::to_string(kOldestCheckpointFormatVersion) + " to " + std::to_string(kCheckpointFormatVersion));
  const int64_t manifest_step = m.integer("step");
  if (manifest_step != step)
    m.fail("the manifest says step " + std::to_string(manifest_step) + " but its file name says step " +
           std::to_string(step));
  const std::string file = m.string("tensors_file");
  // A plain name of a visible file in this directory: no separator, no "." or "..", and not a
  // hidden name (temporaries are hidden).
  if (file.empty() || file.find('/') != std::string::npos || file.find('\0') != std::string::npos || file[0] == '.')
    m.fail("tensors_file \"" + file + "\" is not the name of a file inside the checkpoint directory");
  const uint64_t bytes = m.unsigned_integer("tensors_bytes");
  const std::string checksum = m.string("tensors_checksum");
  if (checksum.size() != 16 || checksum.find_first_not_of("0123456789abcdef") != std::string::npos)
    m.fail("tensors_checksum \"" + checksum + "\" is not 16 lowercase hex digits");
  const json& fields = m.get("fields");
  if (!fields.is_object()) m.fail(std::string("\"fields\" is ") + json_kind(fields) + ", expected an object");

  Checkpoint checkpoint;
  checkpoint.step = step;
  checkpoint.manifest_path = manifest_path;
  for (const auto& item : fields.items()) {
    const json& v = item.value();
    if (v.is_boolean()) checkpoint.fields[item.key()] = v.get<bool>();
    else if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      m.fail("field '" + item.key() + "' holds an integer larger than 2^63 - 1");
    else if (v.is_number_integer()) checkpoint.fields[item.key()] = v.get<int64_t>();
    else if (v.is_number_float()) checkpoint.fields[item.key()] = v.get<double>();
    else if (v.is_string()) checkpoint.fields[item.key()] = v.get<std::string>();
    else
      m.fail("field '" + item.key() + "' holds " + json_kind(v) + "; fields hold booleans, integers, doubles or strings");
  }

  const std::filesystem::path tensors_path = directory_ / file;
  if (!std::filesystem::exists(tensors_path, ec))
    m.fail("its tensors file " + tensors_path.string() + " does not exist");
  const auto [size, actual] = size_and_checksum(tensors_path, version);
  if (size != bytes)
    CTRAX_THROW(tensors_path.string(), ": the file is ", size, " bytes but the manifest ", manifest_path.string(),
                " says ", bytes, " (a torn or replaced file)");
  if (hex64(actual) != checksum)
    CTRAX_THROW(tensors_path.string(), ": the checksum is ", hex64(actual), " but the manifest ",
                manifest_path.string(), " says ", checksum, " (the file is corrupted)");
  checkpoint.tensors = load_safetensors(tensors_path).tensors;
  return checkpoint;
}

std::optional<Checkpoint> CheckpointDirectory::load_latest() const {
  const std::optional<int64_t> step = latest_step();
  if (!step) return std::nullopt;
  return load(*step);
}

}  // namespace ctrax::io
