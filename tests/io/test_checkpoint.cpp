// Checkpoint directories: round trips, keep_last, replacing a step, every bad manifest and tensor
// file the loader must refuse, and a writer killed at arbitrary moments.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <ctrax/io/checkpoint.h>
#include <ctrax/io/safetensors.h>
#include <ctrax/tensor/ops.h>

#include "io/temp_dir.h"
#include "test_util.h"

using namespace ctrax;
using namespace ctrax::io;
using ctrax::test::list_dir;
using ctrax::test::read_bytes;
using ctrax::test::TempDir;
using ctrax::test::write_bytes;
using namespace std::string_literals;

namespace {

std::map<std::string, Tensor> model_tensors(uint64_t seed) {
  return {{"weights/0/kernel", test::random_tensor(Shape{4, 3}, DType::float32, seed)},
          {"weights/0/bias", test::random_tensor(Shape{3}, DType::float64, seed + 1)},
          {"rng", test::random_tensor(Shape{2}, DType::int64, seed + 2, -1e9, 1e9)},
          {"counts", test::random_tensor(Shape{5}, DType::int32, seed + 3, 0, 100)},
          {"done", test::random_tensor(Shape{2, 2}, DType::boolean, seed + 4)},
          {"empty", zeros(Shape{0})}};
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(ca.numel()) * ca.element_size()) == 0;
}

void check_same_tensors(const std::map<std::string, Tensor>& actual, const std::map<std::string, Tensor>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (const auto& entry : expected) {
    const std::string& name = entry.first;
    const Tensor& t = entry.second;
    INFO("tensor ", name);
    REQUIRE(actual.count(name) == 1);
    CHECK(same_tensor(actual.at(name), t));
  }
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no ctrax::Error was thrown>";
}

}  // namespace

TEST_CASE("checkpoint: save and load round-trip tensors and fields") {
  TempDir dir;
  CheckpointDirectory ckpt(dir / "run" / "checkpoints");  // parents are created
  CHECK(ckpt.keep_last() == 3);
  const auto tensors = model_tensors(1);
  const ManifestFields fields{{"epoch", int64_t{7}},  {"lr", 0.00125},           {"whole", 2.0},
                              {"done", true},         {"name", std::string("ppo")}, {"big", int64_t{INT64_MIN}}};
  const auto manifest = ckpt.save(42, tensors, fields);
  CHECK(manifest == dir / "run" / "checkpoints" / "checkpoint-0000000042.json");
  CHECK(list_dir(ckpt.directory()) ==
        std::vector<std::string>{"checkpoint-0000000042.json", "checkpoint-0000000042.safetensors"});

  const Checkpoint c = ckpt.load(42);
  CHECK(c.step == 42);
  CHECK(c.manifest_path == manifest);
  check_same_tensors(c.tensors, tensors);
  CHECK(c.fields == fields);
  CHECK(c.int_field("epoch") == 7);
  CHECK(c.int_field("big") == INT64_MIN);
  CHECK(c.double_field("lr") == 0.00125);
  CHECK(c.double_field("whole") == 2.0);
  CHECK(std::holds_alternative<double>(c.fields.at("whole")));  // 2.0 stays a double through JSON
  CHECK(c.double_field("epoch") == 7.0);                        // integers are accepted as doubles
  CHECK(c.bool_field("done"));
  CHECK(c.string_field("name") == "ppo");
  CHECK(same_tensor(c.tensor("rng"), tensors.at("rng")));
  CHECK_THROWS_WITH_AS(c.int_field("missing"), doctest::Contains("has no field 'missing'"), Error);
  CHECK_THROWS_WITH_AS(c.int_field("lr"), doctest::Contains("field 'lr' holds a double, not an integer"), Error);
  CHECK_THROWS_WITH_AS(c.bool_field("name"), doctest::Contains("field 'name' holds a string, not a bool"), Error);
  CHECK_THROWS_WITH_AS(c.string_field("epoch"), doctest::Contains("holds an integer, not a string"), Error);
  CHECK_THROWS_WITH_AS(c.double_field("done"), doctest::Contains(manifest.c_str()), Error);
  CHECK_THROWS_WITH_AS(c.tensor("nope"), doctest::Contains("has no tensor 'nope'"), Error);

  // The manifest is the documented JSON, and the tensor file a plain safetensors file.
  const auto m = nlohmann::json::parse(read_bytes(manifest));
  CHECK(m.at("format") == "ctrax-checkpoint");
  CHECK(m.at("version") == kCheckpointFormatVersion);
  CHECK(m.at("step") == 42);
  CHECK(m.at("tensors_file") == "checkpoint-0000000042.safetensors");
  const std::string tensor_bytes = read_bytes(ckpt.directory() / "checkpoint-0000000042.safetensors");
  CHECK(m.at("tensors_bytes") == tensor_bytes.size());
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(xxh3_64(tensor_bytes.data(), tensor_bytes.size())));
  CHECK(m.at("tensors_checksum") == hex);
  check_same_tensors(load_safetensors(ckpt.directory() / "checkpoint-0000000042.safetensors").tensors, tensors);

  // A second directory object sees the same checkpoints.
  CHECK(CheckpointDirectory(ckpt.directory()).latest_step() == 42);
}

TEST_CASE("checkpoint: a version 1 manifest (FNV-1a checksum) still loads, its checksum checked as FNV-1a") {
  TempDir dir;
  CheckpointDirectory ckpt(dir.path() / "ckpt");
  const std::map<std::string, Tensor> tensors{{"w", from_vector<float>({1.5f, -2.0f, 3.25f}, Shape{3})}};
  ckpt.save(3, tensors, {{"epoch", int64_t{3}}});
  const std::filesystem::path manifest = ckpt.directory() / "checkpoint-0000000003.json";
  const std::string tensor_bytes = read_bytes(ckpt.directory() / "checkpoint-0000000003.safetensors");
  auto hex_of = [](uint64_t v) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(v));
    return std::string(hex);
  };
  nlohmann::json m = nlohmann::json::parse(read_bytes(manifest));
  CHECK(m.at("version") == 2);
  CHECK(m.at("tensors_checksum") == hex_of(xxh3_64(tensor_bytes.data(), tensor_bytes.size())));
  // As an older ctrax wrote it: version 1, FNV-1a.
  m["version"] = 1;
  m["tensors_checksum"] = hex_of(fnv1a64(tensor_bytes.data(), tensor_bytes.size()));
  write_bytes(manifest, m.dump());
  const Checkpoint c = ckpt.load(3);
  CHECK(c.int_field("epoch") == 3);
  CHECK(same_tensor(c.tensor("w"), tensors.at("w")));
  // A version 1 manifest with an XXH3 checksum does not match.
  m["tensors_checksum"] = hex_of(xxh3_64(tensor_bytes.data(), tensor_bytes.size()));
  write_bytes(manifest, m.dump());
  CHECK_THROWS_WITH_AS(ckpt.load(3), doctest::Contains("(the file is corrupted)"), Error);
}

TEST_CASE("checkpoint: xxh3_64 matches libxxhash's XXH3 test vectors, and the writer's streamed checksum equals it") {
  CHECK(xxh3_64("", 0) == 0x2d06800538d394c2ULL);
  CHECK(xxh3_64("a", 1) == 0xe6c632b61e964e1fULL);
  std::string long_text;
  for (int i = 0; i < 5000; ++i) long_text += static_cast<char>('a' + i % 26);
  Xxh3Stream stream;
  for (size_t at = 0; at < long_text.size(); at += 777)
    stream.update(long_text.data() + at, std::min<size_t>(777, long_text.size() - at));
  CHECK(stream.digest() == xxh3_64(long_text.data(), long_text.size()));
}

TEST_CASE("checkpoint: fnv1a64 matches the published test vectors and chains") {
  CHECK(fnv1a64("", 0) == 0xcbf29ce484222325ULL);
  CHECK(fnv1a64("a", 1) == 0xaf63dc4c8601ec8cULL);
  CHECK(fnv1a64("foobar", 6) == 0x85944171f73967e8ULL);
  CHECK(fnv1a64("bar", 3, fnv1a64("foo", 3)) == fnv1a64("foobar", 6));
}

TEST_CASE("checkpoint: a background save writes what save() writes, from copies taken before it returns") {
  TempDir dir;
  const auto tensors = model_tensors(5);
  const ManifestFields fields{{"epoch", int64_t{3}}, {"name", std::string("bg")}};
  {
    CheckpointDirectory sync(dir / "sync");
    sync.save(3, tensors, fields);
  }
  std::map<std::string, Tensor> live;
  for (const auto& [name, t] : tensors) live.emplace(name, t.clone());
  {
    CheckpointDirectory background(dir / "background", 2);
    background.save_in_background(3, live, fields);
    // The caller changes its tensors at once (as the next epoch's optimizer does).
    live.at("weights/0/kernel").fill_(99.0);
    CHECK(background.steps() == std::vector<int64_t>{3});  // waits for the save
    CHECK(read_bytes(background.directory() / "checkpoint-0000000003.safetensors") ==
          read_bytes(dir / "sync" / "checkpoint-0000000003.safetensors"));
    CHECK(read_bytes(background.directory() / "checkpoint-0000000003.json") ==
          read_bytes(dir / "sync" / "checkpoint-0000000003.json"));
    // Several in a row: each waits for the one before; keep_last still applies.
    for (int64_t step = 4; step <= 6; ++step) background.save_in_background(step, live, fields);
    background.wait();
    CHECK(background.steps() == std::vector<int64_t>{5, 6});
    check_same_tensors(background.load(6).tensors, live);
    background.save_in_background(7, tensors, fields);
  }  // the destructor waits for the last one
  CHECK(CheckpointDirectory(dir / "background").latest_step() == 7);
}

TEST_CASE("checkpoint: a failed background save is rethrown once by the next call, which then works") {
  TempDir dir;
  CheckpointDirectory ckpt(dir / "ckpt");
  // A directory where the tensor file goes makes the save fail.
  std::filesystem::create_directories(ckpt.directory() / "checkpoint-0000000001.safetensors");
  ckpt.save_in_background(1, model_tensors(1));
  const std::string message = error_of([&] { ckpt.wait(); });
  CHECK(message.find("checkpoint-0000000001.safetensors") != std::string::npos);
  CHECK(ckpt.steps().empty());  // reported once; nothing was committed
  std::filesystem::remove(ckpt.directory() / "checkpoint-0000000001.safetensors");
  ckpt.save_in_background(1, model_tensors(1));
  CHECK(ckpt.latest_step() == 1);
  // A later call reports it as well (here save()).
  std::filesystem::create_directories(ckpt.directory() / "checkpoint-0000000002.safetensors");
  ckpt.save_in_background(2, model_tensors(1));
  CHECK_THROWS_AS(ckpt.save(3, model_tensors(1)), Error);
  CHECK(ckpt.steps() == std::vector<int64_t>{1});
  // Read-only directories refuse it like save().
  const CheckpointDirectory read_only(ckpt.directory(), 3, CheckpointDirectory::Access::read_only);
  CHECK_THROWS_WITH_AS(const_cast<CheckpointDirectory&>(read_only).save_in_background(4, model_tensors(1)),
                       doctest::Contains("read-only"), Error);
}

TEST_CASE("checkpoint: keep_last keeps the newest checkpoints and deletes the rest") {
  TempDir dir;
  CheckpointDirectory ckpt(dir.path(), 2);
  CHECK(ckpt.steps().empty());
  CHECK_FALSE(ckpt.latest_step().has_value());
  CHECK_FALSE(ckpt.load_latest().has_value());
  for (int64_t step : {0, 10, 20, 30, 40}) ckpt.save(step, {{"x", full(Shape{2}, static_cast<double>(step))}});
  CHECK(ckpt.steps() == std::vector<int64_t>{30, 40});
  CHECK(list_dir(dir.path()) == std::vector<std::string>{"checkpoint-0000000030.json", "checkpoint-0000000030.safetensors",
                                                         "checkpoint-0000000040.json", "checkpoint-0000000040.safetensors"});
  const auto latest = ckpt.load_latest();
  REQUIRE(latest.has_value());
  CHECK(latest->step == 40);
  CHECK(latest->tensor("x").to_vector<float>() == std::vector<float>{40, 40});
  CHECK(ckpt.load(30).tensor("x").to_vector<float>() == std::vector<float>{30, 30});
  CHECK_THROWS_WITH_AS(ckpt.load(20), doctest::Contains("no checkpoint of step 20"), Error);

  // keep_last = 1 keeps only the checkpoint just saved, even when its step is below the others
  // (a run rolled back to an earlier checkpoint).
  CheckpointDirectory one(dir.path(), 1);
  one.save(35, {{"x", zeros(Shape{1})}});
  CHECK(one.steps() == std::vector<int64_t>{35});
  // Steps beyond ten digits still sort numerically.
  one.save(12345678901, {});
  CHECK(one.steps() == std::vector<int64_t>{12345678901});
  CHECK(one.load_latest()->tensors.empty());
}

TEST_CASE("checkpoint: saving a step again replaces it") {
  TempDir dir;
  CheckpointDirectory ckpt(dir.path(), 3);
  ckpt.save(1, model_tensors(10), {{"v", int64_t{1}}});
  ckpt.save(2, model_tensors(20), {{"v", int64_t{1}}});
  const auto replacement = model_tensors(30);
  ckpt.save(2, replacement, {{"v", int64_t{2}}});
  CHECK(ckpt.steps() == std::vector<int64_t>{1, 2});
  const Checkpoint c = ckpt.load(2);
  check_same_tensors(c.tensors, replacement);
  CHECK(c.int_field("v") == 2);
  check_same_tensors(ckpt.load(1).tensors, model_tensors(10));
  CHECK(list_dir(dir.path()).size() == 4);
}

TEST_CASE("checkpoint: bad arguments are refused before the directory is touched") {
  TempDir dir;
  CHECK_THROWS_WITH_AS(CheckpointDirectory(dir.path(), 0), doctest::Contains("keep_last must be >= 1, got 0"), Error);
  CheckpointDirectory ckpt(dir.path());
  ckpt.save(5, {{"x", ones(Shape{1})}});
  const auto before = list_dir(dir.path());
  CHECK_THROWS_WITH_AS(ckpt.save(-1, {}), doctest::Contains("the step must be >= 0"), Error);
  CHECK_THROWS_WITH_AS(ckpt.save(5, {}, {{"loss", std::nan("")}}), doctest::Contains("JSON holds only finite numbers"), Error);
  CHECK_THROWS_WITH_AS(ckpt.save(5, {}, {{"", int64_t{1}}}), doctest::Contains("a field has an empty name"), Error);
  CHECK_THROWS_WITH_AS(ckpt.save(5, {}, {{"s", std::string("\xff")}}), doctest::Contains("not valid UTF-8"), Error);
  CHECK_THROWS_WITH_AS(ckpt.save(5, {{"", ones(Shape{1})}}), doctest::Contains("is not allowed"), Error);
  CHECK_THROWS_WITH_AS(ckpt.save(5, {{"u", Tensor()}}), doctest::Contains("'u' is undefined"), Error);
  CHECK(list_dir(dir.path()) == before);
  CHECK(ckpt.load(5).tensor("x").item<float>() == 1.0f);
}

TEST_CASE("checkpoint: a directory that cannot be created or written") {
  TempDir dir;
  write_bytes(dir / "file", "not a directory");
  CHECK_THROWS_WITH_AS(CheckpointDirectory(dir / "file" / "ckpt"), doctest::Contains("cannot create the checkpoint directory"),
                       Error);
  CHECK_THROWS_WITH_AS(CheckpointDirectory(dir / "file"), doctest::Contains("exists but is not a directory"), Error);
  const auto locked = dir / "locked";
  std::filesystem::create_directory(locked);
  std::filesystem::permissions(locked, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  if (::geteuid() == 0) {
    MESSAGE("running as root: permissions do not stop root, so the read-only directory check is skipped");
  } else {
    CHECK_THROWS_WITH_AS(CheckpointDirectory{locked}, doctest::Contains("is not writable"), Error);
  }
  std::filesystem::permissions(locked, std::filesystem::perms::owner_all);
}

TEST_CASE("checkpoint: foreign files, stray tensor files and temporaries are ignored, then cleaned") {
  TempDir dir;
  CheckpointDirectory ckpt(dir.path(), 5);
  ckpt.save(3, {{"x", ones(Shape{2})}});
  // What a crash can leave: a temporary of either file, and a complete tensor file whose
  // manifest never landed. Plus files that are not checkpoints at all.
  write_bytes(dir / ".checkpoint-0000000004.safetensors.tmp.4242.0", "torn");
  write_bytes(dir / ".checkpoint-0000000004.json.tmp.4242.1", "{\"format\":");
  write_bytes(dir / "checkpoint-0000000004.safetensors", "complete but uncommitted");
  const std::vector<std::string> foreign = {"checkpoint-7.json", "checkpoint-abc.json", "checkpoint-00000000099.json",
                                            "notes.txt", "checkpoint-0000000008.json.bak"};
  for (const std::string& name : foreign) write_bytes(dir / name, "{}");
  CHECK(ckpt.steps() == std::vector<int64_t>{3});
  CHECK(ckpt.load_latest()->step == 3);

  ckpt.save(5, {{"x", zeros(Shape{2})}});
  std::vector<std::string> expected = foreign;
  for (const char* name : {"checkpoint-0000000003.json", "checkpoint-0000000003.safetensors", "checkpoint-0000000005.json",
                           "checkpoint-0000000005.safetensors"})
    expected.push_back(name);
  std::sort(expected.begin(), expected.end());
  CHECK(list_dir(dir.path()) == expected);
  CHECK(ckpt.steps() == std::vector<int64_t>{3, 5});
}

TEST_CASE("checkpoint: bad manifests are refused with the manifest's name and the reason") {
  TempDir dir;
  CheckpointDirectory ckpt(dir.path());
  const auto tensors = model_tensors(5);
  const auto manifest = ckpt.save(5, tensors, {{"k", int64_t{1}}});
  const nlohmann::json good = nlohmann::json::parse(read_bytes(manifest));

  auto check_refused = [&](const std::string& text, const std::string& reason) {
    write_bytes(manifest, text);
    const std::string msg = error_of([&] { ckpt.load(5); });
    INFO("manifest: ", text);
    INFO("error: ", msg);
    CHECK(msg.rfind(manifest.string() + ": ", 0) == 0);
    CHECK(msg.find(reason) != std::string::npos);
  };
  auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json m = good;
    edit(m);
    return m.dump();
  };

  check_refused("", "not valid JSON");
  check_refused("{\"format\": ", "not valid JSON");
  check_refused("[1, 2]", "the manifest is an array, not a JSON object");
  check_refused("\"text\"", "the manifest is a string, not a JSON object");
  check_refused(std::string(100000, '[') + std::string(100000, ']'), "nests deeper than a checkpoint manifest does");
  for (const char* key : {"format", "version", "step", "tensors_file", "tensors_bytes", "tensors_checksum", "fields"})
    check_refused(with([&](auto& m) { m.erase(key); }), std::string("the manifest has no \"") + key + "\"");
  check_refused(with([](auto& m) { m["extra"] = 1; }), "the manifest has the unknown key \"extra\"");
  check_refused(with([](auto& m) { m["format"] = 1; }), "\"format\" is an integer, expected a string");
  check_refused(with([](auto& m) { m["format"] = "safetensors"; }), "the format is \"safetensors\", expected \"ctrax-checkpoint\"");
  check_refused(with([](auto& m) { m["version"] = "1"; }), "\"version\" is a string, expected an integer");
  check_refused(with([](auto& m) { m["version"] = 1.0; }), "\"version\" is a float, expected an integer");
  check_refused(with([](auto& m) { m["version"] = 3; }), "the format version is 3; this build reads versions 1 to 2");
  check_refused(with([](auto& m) { m["version"] = 0; }), "the format version is 0; this build reads versions 1 to 2");
  check_refused(with([](auto& m) { m["step"] = 6; }), "the manifest says step 6 but its file name says step 5");
  check_refused(with([](auto& m) { m["step"] = nullptr; }), "\"step\" is null, expected an integer");
  check_refused(with([](auto& m) { m["step"] = UINT64_MAX; }), "\"step\" is 18446744073709551615, larger than 2^63 - 1");
  for (const char* escape : {"../checkpoint-0000000005.safetensors", "/etc/passwd", "sub/x.safetensors", "..", ".", "",
                             ".checkpoint-0000000005.safetensors.tmp.1.2"})
    check_refused(with([&](auto& m) { m["tensors_file"] = escape; }), "is not the name of a file inside the checkpoint directory");
  check_refused(with([](auto& m) { m["tensors_bytes"] = -1; }), "\"tensors_bytes\" is an integer, expected a non-negative integer");
  check_refused(with([](auto& m) { m["tensors_bytes"] = "12"; }), "expected a non-negative integer");
  check_refused(with([](auto& m) { m["tensors_checksum"] = 5; }), "\"tensors_checksum\" is an integer, expected a string");
  check_refused(with([](auto& m) { m["tensors_checksum"] = "ABCDEF0123456789"; }), "is not 16 lowercase hex digits");
  check_refused(with([](auto& m) { m["tensors_checksum"] = "0123"; }), "is not 16 lowercase hex digits");
  check_refused(with([](auto& m) { m["fields"] = nlohmann::json::array(); }), "\"fields\" is an array, expected an object");
  check_refused(with([](auto& m) { m["fields"]["bad"] = nlohmann::json::array(); }), "field 'bad' holds an array");
  check_refused(with([](auto& m) { m["fields"]["bad"] = nullptr; }), "field 'bad' holds null");
  check_refused(with([](auto& m) { m["fields"]["bad"] = nlohmann::json::object(); }), "field 'bad' holds an object");
  check_refused(with([](auto& m) { m["fields"]["bad"] = UINT64_MAX; }), "larger than 2^63 - 1");
  check_refused(with([](auto& m) { m["fields"]["deep"] = {{"a", {1}}}; }), "nests deeper");
  // The tensors file named must exist.
  check_refused(with([](auto& m) { m["tensors_file"] = "other.safetensors"; }), "does not exist");

  // A valid manifest again loads again (the edits above were the only problem).
  write_bytes(manifest, good.dump());
  check_same_tensors(ckpt.load(5).tensors, tensors);
  // A newest checkpoint that fails is an error, never silently skipped.
  write_bytes(manifest, "garbage");
  CHECK_THROWS_WITH_AS(ckpt.load_latest(), doctest::Contains("not valid JSON"), Error);
}

TEST_CASE("checkpoint: tensor files that are missing, torn, corrupted or malformed") {
  TempDir dir;
  CheckpointDirectory ckpt(dir.path());
  const auto tensors = model_tensors(8);
  const auto manifest = ckpt.save(8, tensors);
  const auto tensor_path = dir / "checkpoint-0000000008.safetensors";
  const std::string good = read_bytes(tensor_path);
  auto load_error = [&] { return error_of([&] { ckpt.load(8); }); };

  write_bytes(tensor_path, good + "x");
  std::string msg = load_error();
  CHECK(msg.find(tensor_path.string() + ": the file is " + std::to_string(good.size() + 1) + " bytes but the manifest") == 0);
  write_bytes(tensor_path, good.substr(0, good.size() / 2));
  CHECK(load_error().find("bytes but the manifest") != std::string::npos);

  std::string flipped = good;
  flipped[flipped.size() - 3] ^= 0x10;
  write_bytes(tensor_path, flipped);
  msg = load_error();
  CHECK(msg.rfind(tensor_path.string() + ": the checksum is ", 0) == 0);
  CHECK(msg.find("(the file is corrupted)") != std::string::npos);

  // A tensors file that matches its manifest but is no valid safetensors file: the
  // safetensors checks still run, and name the tensor file.
  const std::string bad = "\x02\0\0\0\0\0\0\0[]"s;
  write_bytes(tensor_path, bad);
  nlohmann::json m = nlohmann::json::parse(read_bytes(manifest));
  m["tensors_bytes"] = bad.size();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(xxh3_64(bad.data(), bad.size())));
  m["tensors_checksum"] = hex;
  write_bytes(manifest, m.dump());
  msg = load_error();
  CHECK(msg.rfind(tensor_path.string() + ": the header is an array, not a JSON object", 0) == 0);

  std::filesystem::remove(tensor_path);
  msg = load_error();
  CHECK(msg.rfind(manifest.string() + ": its tensors file", 0) == 0);
  CHECK(msg.find("does not exist") != std::string::npos);
}

// ---- Crash safety ---------------------------------------------------------------------------------

namespace {

// Sets every element of every tensor to `step` (bools to step % 2), with plain loops: the
// forked writer must not use the thread pool, whose threads do not exist in a child process.
void fill_with_step(std::map<std::string, Tensor>& tensors, int64_t step) {
  for (auto& entry : tensors) {
    Tensor& t = entry.second;
    dispatch_dtype(t.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* p = static_cast<T*>(t.raw_data());
      const T value = std::is_same_v<T, uint8_t> ? static_cast<T>(step % 2) : static_cast<T>(step);
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = value;
    });
  }
}

// True when every element of every tensor equals what fill_with_step(step) wrote.
bool filled_with_step(const std::map<std::string, Tensor>& tensors, int64_t step) {
  for (const auto& entry : tensors) {
    const Tensor& t = entry.second;
    const bool ok = dispatch_dtype(t.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = static_cast<const T*>(t.raw_data());
      const T value = std::is_same_v<T, uint8_t> ? static_cast<T>(step % 2) : static_cast<T>(step);
      for (int64_t i = 0; i < t.numel(); ++i)
        if (p[i] != value) return false;
      return true;
    });
    if (!ok) return false;
  }
  return true;
}

// The forked writer: saves checkpoints of `tensors` filled with their step, one after another,
// and writes a byte to `ready_fd` after the first commit. Never returns.
[[noreturn]] void run_writer(const std::filesystem::path& dir, std::map<std::string, Tensor> tensors, int ready_fd) {
  int status = 0;
  try {
    CheckpointDirectory ckpt(dir, 2);
    int64_t step = ckpt.latest_step().value_or(0) + 1;
    for (int i = 0; i < 500; ++i, ++step) {  // bounded: the parent kills it long before
      fill_with_step(tensors, step);
      ckpt.save(step, tensors, {{"step_copy", step}});
      if (i == 0 && ::write(ready_fd, "c", 1) != 1) status = 3;
    }
  } catch (...) {
    status = 2;
  }
  ::_exit(status);
}

// True when the directory holds a temporary tensor file with at least 4 MB written.
bool half_written_temporary(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".checkpoint-", 0) == 0 && name.find(".safetensors.tmp.") != std::string::npos &&
        e.file_size(ec) >= (4u << 20))
      return true;
  }
  return false;
}

}  // namespace

TEST_CASE("checkpoint: a writer killed at any moment leaves the newest committed checkpoint loadable") {
  TempDir dir;
  // About 26 MB per checkpoint, so a save takes long enough for kills to land in all its phases.
  std::map<std::string, Tensor> tensors{{"a/kernel", empty(Shape{1 << 20, 4}, DType::float32)},
                                        {"b/bias", empty(Shape{1 << 19}, DType::float64)},
                                        {"c/ids", empty(Shape{1 << 20}, DType::int32)},
                                        {"d/done", empty(Shape{1000}, DType::boolean)},
                                        {"e/count", empty(Shape{}, DType::int64)}};
  int64_t previous_latest = 0;
  // Kills at fixed delays after the first commit of each round, spread over whole save cycles,
  // and (delay -1) as soon as a temporary tensor file holds a few MB: certainly mid-file.
  for (int delay_ms : {0, 10, 40, 100, 250, 600, -1}) {
    const std::string when = delay_ms >= 0 ? std::to_string(delay_ms) + " ms after a commit" : std::string("mid-file");
    INFO("killed ", when);
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::close(pipe_fds[0]);
      run_writer(dir.path(), tensors, pipe_fds[1]);
    }
    ::close(pipe_fds[1]);
    // Wait (at most a minute, so a broken writer fails the test instead of hanging it) for the
    // first commit, then let the writer run on and kill it.
    pollfd pfd{pipe_fds[0], POLLIN, 0};
    const int polled = ::poll(&pfd, 1, 60000);
    char byte = 0;
    const bool committed = polled == 1 && ::read(pipe_fds[0], &byte, 1) == 1;
    ::close(pipe_fds[0]);
    if (committed && delay_ms >= 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    // At most 20000 looks a millisecond apart: the next save's tensor file appears long before.
    for (int i = 0; committed && delay_ms < 0 && i < 20000 && !half_written_temporary(dir.path()); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ::kill(child, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE_MESSAGE(committed, "the writer never committed a checkpoint (exit status ", status, ")");
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));

    CheckpointDirectory reader(dir.path(), 2);
    const std::vector<int64_t> steps = reader.steps();
    REQUIRE_FALSE(steps.empty());
    CHECK(steps.back() > previous_latest);
    previous_latest = steps.back();
    // Every committed checkpoint, not only the newest, is complete and consistent.
    for (int64_t step : steps) {
      const Checkpoint c = reader.load(step);
      CHECK(c.int_field("step_copy") == step);
      CHECK(c.tensors.size() == tensors.size());
      CHECK(filled_with_step(c.tensors, step));
    }
    const auto latest = reader.load_latest();
    REQUIRE(latest.has_value());
    CHECK(latest->step == steps.back());
    const auto leftovers = list_dir(dir.path()).size() - 2 * steps.size();
    MESSAGE("killed ", when, ": ", steps.size(), " committed checkpoints (newest step ", steps.back(), "), ",
            leftovers, " leftover files");
  }

  // Whatever the kills left behind is ignored by readers and removed by the next save.
  write_bytes(dir / ".checkpoint-0000009999.safetensors.tmp.1.1", "torn");
  write_bytes(dir / "checkpoint-0000009999.safetensors", "uncommitted");
  CheckpointDirectory ckpt(dir.path(), 2);
  CHECK(ckpt.latest_step() == previous_latest);
  const int64_t next = previous_latest + 1;
  fill_with_step(tensors, next);
  ckpt.save(next, tensors, {{"step_copy", next}});
  std::vector<std::string> expected;
  for (int64_t step : {previous_latest, next}) {
    char name[64];
    std::snprintf(name, sizeof name, "checkpoint-%010lld", static_cast<long long>(step));
    expected.push_back(std::string(name) + ".json");
    expected.push_back(std::string(name) + ".safetensors");
  }
  CHECK(list_dir(dir.path()) == expected);
  CHECK(filled_with_step(ckpt.load_latest()->tensors, next));
}

TEST_CASE("checkpoint: a read-only directory creates nothing, lists nothing when missing and refuses writes") {
  TempDir dir;
  const std::filesystem::path missing = dir / "not" / "there";
  const CheckpointDirectory reader(missing, 2, CheckpointDirectory::Access::read_only);
  CHECK(reader.steps().empty());
  CHECK_FALSE(reader.load_latest().has_value());
  CHECK_FALSE(std::filesystem::exists(dir / "not"));
  CheckpointDirectory writer(dir / "ckpt", 3);
  const std::map<std::string, Tensor> tensors{{"x", ctrax::zeros(ctrax::Shape{2})}};
  for (int64_t step : {1, 2, 3}) writer.save(step, tensors);
  CheckpointDirectory read_only(dir / "ckpt", 3, CheckpointDirectory::Access::read_only);
  CHECK(read_only.latest_step() == 3);
  CHECK_THROWS_WITH_AS(read_only.save(4, tensors), doctest::Contains("opened read-only"), Error);
  CHECK_THROWS_WITH_AS(read_only.remove_after(1), doctest::Contains("opened read-only"), Error);
  // remove_after drops the later checkpoints, manifests first.
  writer.remove_after(1);
  CHECK(writer.steps() == std::vector<int64_t>{1});
  CHECK_FALSE(std::filesystem::exists(dir / "ckpt" / "checkpoint-0000000002.safetensors"));
}
