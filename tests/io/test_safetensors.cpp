// safetensors files: round trips, agreement with Python's safetensors (fixtures written by
// tests/fixtures/safetensors_fixture.py), and every malformed file the loader must refuse with
// a ctrax::Error naming the file and the reason.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrax/io/safetensors.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tensor.h>

#include "io/temp_dir.h"
#include "test_util.h"

using namespace ctrax;
using namespace ctrax::io;
using ctrax::test::TempDir;

namespace {

const std::string kFixtures = std::string(CTRAX_FIXTURES_DIR) + "/safetensors";

std::span<const uint8_t> as_span(const std::string& bytes) {
  return {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
}

std::string le64(uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out;
}

// A file whose header is exactly `header` (no padding) followed by `data`.
std::string file_with(const std::string& header, const std::string& data = "") { return le64(header.size()) + header + data; }

// The bytes of a tensor in row-major order.
std::string bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.raw_data()), static_cast<size_t>(c.numel()) * c.element_size());
}

void check_same(const Tensor& actual, const Tensor& expected, const std::string& name) {
  INFO("tensor ", name);
  REQUIRE(actual.defined());
  CHECK(actual.dtype() == expected.dtype());
  CHECK(actual.shape() == expected.shape());
  CHECK(actual.is_contiguous());
  CHECK(bytes_of(actual) == bytes_of(expected));  // bitwise: -0.0, denormals and extremes included
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

// Both loaders refuse `bytes` with an error that starts with the file's name and gives `reason`.
void check_refused(const std::string& bytes, const std::string& reason) {
  INFO("expected reason: ", reason);
  const std::string from_memory = error_of([&] { decode_safetensors(as_span(bytes), "in-memory.safetensors"); });
  INFO("decode_safetensors said: ", from_memory);
  CHECK(from_memory.rfind("in-memory.safetensors: ", 0) == 0);
  CHECK(from_memory.find(reason) != std::string::npos);

  TempDir dir;
  const auto path = dir / "bad.safetensors";
  test::write_bytes(path, bytes);
  const std::string from_file = error_of([&] { load_safetensors(path); });
  INFO("load_safetensors said: ", from_file);
  CHECK(from_file.rfind(path.string() + ": ", 0) == 0);
  CHECK(from_file.find(reason) != std::string::npos);
}

// One entry of a header.
std::string entry(const std::string& name, const std::string& dtype, const std::string& shape, uint64_t begin,
                  uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

std::map<std::string, Tensor> sample_tensors() {
  std::map<std::string, Tensor> t;
  t["w"] = test::random_tensor(Shape{3, 4}, DType::float32, 1);
  t["b"] = test::random_tensor(Shape{4}, DType::float64, 2);
  t["ids"] = test::random_tensor(Shape{2, 2, 2}, DType::int32, 3, -100, 100);
  t["big"] = test::random_tensor(Shape{5}, DType::int64, 4, -1e12, 1e12);
  t["mask"] = test::random_tensor(Shape{7}, DType::boolean, 5);
  t["scalar"] = scalar_tensor(2.5, DType::float64);
  t["empty"] = zeros(Shape{0, 3}, DType::float32);
  return t;
}

// A tensor described by the fixture JSON ({"dtype", "shape", "values"}).
Tensor tensor_from_json(const nlohmann::json& e) {
  const DType dtype = dtype_from_safetensors_name(e.at("dtype").get<std::string>(), "expected.json");
  const Shape shape(e.at("shape").get<std::vector<int64_t>>());
  const nlohmann::json& values = e.at("values");
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> v;
    for (const nlohmann::json& x : values) {
      if constexpr (std::is_same_v<T, uint8_t>) v.push_back(x.get<bool>() ? 1 : 0);
      else if constexpr (std::is_floating_point_v<T>) v.push_back(static_cast<T>(x.get<double>()));
      else v.push_back(static_cast<T>(x.get<int64_t>()));
    }
    return from_vector(v, shape);
  });
}

nlohmann::json fixture_expectations() {
  return nlohmann::json::parse(test::read_bytes(kFixtures + "/expected.json"));
}

}  // namespace

// ---- Round trips ------------------------------------------------------------------------------

TEST_CASE("safetensors: save and load round-trip every dtype, a scalar, an empty tensor and metadata") {
  TempDir dir;
  const auto tensors = sample_tensors();
  const std::map<std::string, std::string> metadata{{"step", "12"}, {"note", "caf\xc3\xa9"}};
  save_safetensors(dir / "t.safetensors", tensors, metadata);
  const SafetensorsContents loaded = load_safetensors(dir / "t.safetensors");
  CHECK(loaded.metadata == metadata);
  REQUIRE(loaded.tensors.size() == tensors.size());
  for (const auto& [name, t] : tensors) check_same(loaded.tensors.at(name), t, name);

  // The file is exactly what encode_safetensors gives, and decodes the same way.
  const std::string encoded = encode_safetensors(tensors, metadata);
  CHECK(test::read_bytes(dir / "t.safetensors") == encoded);
  const SafetensorsContents decoded = decode_safetensors(as_span(encoded), "memory");
  for (const auto& [name, t] : tensors) check_same(decoded.tensors.at(name), t, name);
  CHECK(test::list_dir(dir.path()) == std::vector<std::string>{"t.safetensors"});  // no temporaries left
}

TEST_CASE("safetensors: the layout is a padded header then the tensors in name order from offset 0") {
  const auto tensors = sample_tensors();
  const std::string bytes = encode_safetensors(tensors);
  const SafetensorsIndex index = parse_safetensors_header(as_span(bytes), bytes.size(), "memory");
  CHECK(index.data_start % 8 == 0);
  CHECK(bytes.substr(8, index.data_start - 8).find('{') == 0);
  CHECK(index.metadata.empty());
  REQUIRE(index.entries.size() == tensors.size());
  uint64_t offset = 0;
  auto it = tensors.begin();
  for (const SafetensorsEntry& e : index.entries) {
    CHECK(e.name == it->first);
    CHECK(e.begin == offset);
    CHECK(e.shape == it->second.shape().vec());
    offset = e.end;
    ++it;
  }
  CHECK(index.data_start + offset == bytes.size());
}

TEST_CASE("safetensors: strided tensors are written row-major") {
  const Tensor base = test::random_tensor(Shape{4, 5}, DType::float32, 9);
  const Tensor strided = test::non_contiguous(base);
  REQUIRE_FALSE(strided.is_contiguous());
  const Tensor sliced = base.slice(1, 1, 5, 2);  // columns 1 and 3
  const std::string bytes = encode_safetensors({{"t", strided}, {"s", sliced}});
  const SafetensorsContents loaded = decode_safetensors(as_span(bytes), "memory");
  check_same(loaded.tensors.at("t"), base, "t");
  check_same(loaded.tensors.at("s"), sliced.contiguous(), "s");
}

TEST_CASE("safetensors: a header that lists tensors out of offset order is valid, as in Python") {
  // JSON objects are unordered; only the offsets order the data buffer.
  const std::string header = "{" + entry("z", "I32", "[1]", 0, 4) + "," + entry("a", "I32", "[2]", 4, 12) + "}";
  std::string data = le64(0).substr(0, 4);
  data[0] = 7;
  data += std::string(8, '\0');
  data[4] = 1;
  const SafetensorsContents c = decode_safetensors(as_span(file_with(header, data)), "memory");
  CHECK(c.tensors.at("z").to_vector<int32_t>() == std::vector<int32_t>{7});
  CHECK(c.tensors.at("a").to_vector<int32_t>() == std::vector<int32_t>{1, 0});
}

TEST_CASE("safetensors: an empty file set and empty tensors at shared offsets are valid") {
  CHECK(decode_safetensors(as_span(file_with("{}")), "memory").tensors.empty());
  CHECK(decode_safetensors(as_span(file_with("{}  ")), "memory").tensors.empty());  // padding
  const std::string header =
      "{" + entry("e1", "F32", "[0]", 0, 0) + "," + entry("x", "F32", "[1]", 0, 4) + "," + entry("e2", "F64", "[3,0]", 4, 4) + "}";
  const SafetensorsContents c = decode_safetensors(as_span(file_with(header, std::string(4, '\0'))), "memory");
  CHECK(c.tensors.at("e1").numel() == 0);
  CHECK(c.tensors.at("e2").shape() == Shape{3, 0});
  CHECK(c.tensors.at("x").item<float>() == 0.0f);
}

TEST_CASE("safetensors: save refuses bad names, undefined tensors and unwritable paths") {
  TempDir dir;
  const Tensor t = zeros(Shape{2});
  CHECK_THROWS_WITH_AS(encode_safetensors({{"", t}}), doctest::Contains("empty name"), Error);
  CHECK_THROWS_WITH_AS(encode_safetensors({{"__metadata__", t}}), doctest::Contains("may not be named __metadata__"), Error);
  CHECK_THROWS_WITH_AS(encode_safetensors({{"u", Tensor()}}), doctest::Contains("'u' is undefined"), Error);
  CHECK_THROWS_WITH_AS(encode_safetensors({{"bad\xff", t}}), doctest::Contains("not valid UTF-8"), Error);
  CHECK_THROWS_WITH_AS(encode_safetensors({{"t", t}}, {{"k", "\xc3"}}), doctest::Contains("not valid UTF-8"), Error);
  const auto missing = dir / "no-such-dir" / "t.safetensors";
  CHECK_THROWS_WITH_AS(save_safetensors(missing, {{"t", t}}), doctest::Contains(missing.c_str()), Error);
  CHECK_THROWS_WITH_AS(save_safetensors(dir / "x.safetensors", {{"", t}}), doctest::Contains("x.safetensors"), Error);
  CHECK(test::list_dir(dir.path()).empty());
}

TEST_CASE("safetensors: dtype names") {
  CHECK(std::string(safetensors_dtype_name(DType::float32)) == "F32");
  CHECK(std::string(safetensors_dtype_name(DType::float64)) == "F64");
  CHECK(std::string(safetensors_dtype_name(DType::int32)) == "I32");
  CHECK(std::string(safetensors_dtype_name(DType::int64)) == "I64");
  CHECK(std::string(safetensors_dtype_name(DType::boolean)) == "BOOL");
  for (DType d : {DType::float32, DType::float64, DType::int32, DType::int64, DType::boolean})
    CHECK(dtype_from_safetensors_name(safetensors_dtype_name(d), "x") == d);
  CHECK_THROWS_WITH_AS(dtype_from_safetensors_name("BF16", "f.safetensors"),
                       doctest::Contains("f.safetensors: the dtype 'BF16' is not supported (ctrax reads F32, F64, I32, I64, BOOL)"),
                       Error);
}

// ---- Python agreement ---------------------------------------------------------------------------

TEST_CASE("safetensors: a file written by Python's safetensors loads with the expected values") {
  const nlohmann::json expected = fixture_expectations().at("python_written");
  const SafetensorsContents loaded = load_safetensors(kFixtures + "/python_written.safetensors");
  CHECK(loaded.metadata == expected.at("metadata").get<std::map<std::string, std::string>>());
  REQUIRE(loaded.tensors.size() == expected.at("tensors").size());
  for (const auto& [name, e] : expected.at("tensors").items()) {
    REQUIRE(loaded.tensors.count(name) == 1);
    check_same(loaded.tensors.at(name), tensor_from_json(e), name);
  }
}

TEST_CASE("safetensors: ctrax_written fixture is what encode_safetensors writes, byte for byte") {
  // tests/fixtures/safetensors_fixture.py checks that Python's safetensors reads this file with
  // these values. CTRAX_REGENERATE_FIXTURES=1 rewrites it (then run the script again).
  const nlohmann::json expected = fixture_expectations().at("ctrax_written");
  std::map<std::string, Tensor> tensors;
  for (const auto& [name, e] : expected.at("tensors").items()) tensors[name] = tensor_from_json(e);
  // A strided view of one of them: the writer must lay it out row-major all the same.
  tensors["b/kernel"] = test::non_contiguous(tensors["b/kernel"]);
  const std::string bytes =
      encode_safetensors(tensors, expected.at("metadata").get<std::map<std::string, std::string>>());
  const std::string path = kFixtures + "/ctrax_written.safetensors";
  const char* regenerate = std::getenv("CTRAX_REGENERATE_FIXTURES");
  if (regenerate != nullptr && std::string(regenerate) == "1") {
    save_safetensors(path, tensors, expected.at("metadata").get<std::map<std::string, std::string>>());
    MESSAGE("rewrote ", path, "; run tests/fixtures/safetensors_fixture.py to check it with Python");
  }
  CHECK(test::read_bytes(path) == bytes);
}

// ---- Malformed files ------------------------------------------------------------------------------

TEST_CASE("safetensors: truncated files") {
  check_refused("", "the file is 0 bytes, too short");
  check_refused(std::string(7, '\0'), "the file is 7 bytes, too short");
  const std::string good = encode_safetensors({{"a", ones(Shape{3})}, {"b", ones(Shape{2}, DType::int64)}});
  const SafetensorsIndex index = parse_safetensors_header(as_span(good), good.size(), "x");
  check_refused(good.substr(0, 8), "runs past the end of the file");                       // header missing
  check_refused(good.substr(0, index.data_start - 1), "runs past the end of the file");    // header cut
  check_refused(good.substr(0, index.data_start), "past the end of the file");             // no data at all
  check_refused(good.substr(0, good.size() - 1), "past the end of the file");              // data cut
  // Every other cut too: always a clear error naming the file, never a crash.
  for (size_t n = 0; n < good.size(); ++n) {
    INFO("cut at ", n, " of ", good.size(), " bytes");
    CHECK_THROWS_WITH_AS(decode_safetensors(as_span(good.substr(0, n)), "cut.safetensors"),
                         doctest::Contains("cut.safetensors: "), Error);
  }
}

TEST_CASE("safetensors: absurd header sizes") {
  check_refused(le64(uint64_t{1} << 63) + "{}", "the header size 9223372036854775808 exceeds the limit of 100000000 bytes");
  check_refused(le64(UINT64_MAX) + "{}", "exceeds the limit");
  check_refused(le64(kMaxSafetensorsHeaderBytes + 1) + "{}", "exceeds the limit");
  check_refused(le64(1000) + "{}", "the header size 1000 runs past the end of the file (10 bytes");
  // The parser must be handed the whole header, and says so when it is not.
  const std::string good = file_with("{}");
  CHECK_THROWS_WITH_AS(parse_safetensors_header(as_span(good).first(9), good.size(), "p"),
                       doctest::Contains("fewer than the 10 the header occupies"), Error);
}

TEST_CASE("safetensors: headers that are not a JSON object of entries") {
  check_refused(file_with("not json"), "the header is not valid JSON");
  check_refused(file_with("{\"a\": "), "the header is not valid JSON");
  check_refused(file_with("{} trailing"), "the header is not valid JSON");
  check_refused(file_with("{\"a\xff\": 1}"), "the header is not valid JSON");  // not UTF-8
  check_refused(file_with(""), "the header is not valid JSON");
  check_refused(file_with("[]"), "the header is an array, not a JSON object");
  check_refused(file_with("\"text\""), "the header is a string, not a JSON object");
  check_refused(file_with("42"), "the header is a number, not a JSON object");
  check_refused(file_with("null"), "the header is null, not a JSON object");
  check_refused(file_with("{\"a\": 5}"), "the entry of 'a' is a number, not an object");
  check_refused(file_with("{\"a\": [1]}"), "the entry of 'a' is an array, not an object");
  check_refused(file_with("{\"a\": \"F32\"}"), "the entry of 'a' is a string, not an object");
  // Deep nesting is refused at once, whether at the top or inside an entry.
  check_refused(file_with(std::string(100000, '[') + std::string(100000, ']')), "the header is an array, not a JSON object");
  check_refused(file_with("{\"a\":{\"dtype\":\"F32\",\"shape\":" + std::string(50000, '[') + std::string(50000, ']') + "}}"),
                "the shape of tensor 'a' holds an array, not a non-negative integer");
}

TEST_CASE("safetensors: entries with missing, extra, repeated or mistyped keys") {
  const std::string four(4, '\0');
  check_refused(file_with("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", four), "tensor 'a' has no dtype");
  check_refused(file_with("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", four), "tensor 'a' has no shape");
  check_refused(file_with("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", four), "tensor 'a' has no data_offsets");
  check_refused(file_with("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":1}}", four),
                "tensor 'a' has the unknown key 'extra'");
  check_refused(file_with("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", four),
                "tensor 'a' has the key 'dtype' twice");
  check_refused(file_with("{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("a", "F32", "[1]", 0, 4) + "}", four),
                "the header names 'a' twice");
  check_refused(file_with("{" + entry("", "F32", "[1]", 0, 4) + "}", four), "a tensor has an empty name");
  check_refused(file_with("{\"a\":{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,4]}}", four),
                "tensor 'a' has a dtype that is a number, not a string");
  check_refused(file_with("{\"a\":{\"dtype\":\"F32\",\"shape\":\"1\",\"data_offsets\":[0,4]}}", four),
                "tensor 'a' has a shape that is a string, not an array");
  check_refused(file_with("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}}", four),
                "tensor 'a' has data_offsets that are an object, not an array");
}

TEST_CASE("safetensors: unknown dtypes and bad dimensions") {
  const std::string four(4, '\0');
  check_refused(file_with("{" + entry("a", "F16", "[2]", 0, 4) + "}", four),
                "tensor 'a' has the dtype 'F16', which ctrax does not support (it reads F32, F64, I32, I64, BOOL)");
  check_refused(file_with("{" + entry("a", "f32", "[1]", 0, 4) + "}", four), "the dtype 'f32'");
  check_refused(file_with("{" + entry("a", "F32", "[-1]", 0, 4) + "}", four), "the shape of tensor 'a' holds the negative number -1");
  check_refused(file_with("{" + entry("a", "F32", "[1.0]", 0, 4) + "}", four),
                "the shape of tensor 'a' holds '1.0', not a non-negative integer");
  check_refused(file_with("{" + entry("a", "F32", "[1e30]", 0, 4) + "}", four), "holds '1e30', not a non-negative integer");
  check_refused(file_with("{" + entry("a", "F32", "[99999999999999999999999]", 0, 4) + "}", four),
                "not a non-negative integer");
  check_refused(file_with("{" + entry("a", "F32", "[9223372036854775808]", 0, 4) + "}", four),
                "has the dimension 9223372036854775808, larger than 2^63 - 1");
  check_refused(file_with("{" + entry("a", "F32", "[\"1\"]", 0, 4) + "}", four), "holds a string, not a non-negative integer");
  check_refused(file_with("{" + entry("a", "F32", "[true]", 0, 4) + "}", four), "holds a boolean");
  check_refused(file_with("{" + entry("a", "F32", "[1,1,1,1,1,1,1,1,1]", 0, 4) + "}", four),
                "tensor 'a' has a shape of more than 8 dimensions");
  CHECK_NOTHROW(decode_safetensors(as_span(file_with("{" + entry("a", "F32", "[1,1,1,1,1,1,1,1]", 0, 4) + "}", four)), "m"));
}

TEST_CASE("safetensors: sizes that overflow or disagree with the offsets") {
  const std::string four(4, '\0');
  check_refused(file_with("{" + entry("a", "F32", "[4294967296,4294967296]", 0, 4) + "}", four), "overflows 64 bits");
  check_refused(file_with("{" + entry("a", "I64", "[2305843009213693952]", 0, 4) + "}", four), "overflows 64 bits");
  check_refused(file_with("{" + entry("a", "F64", "[3037000500,3037000500]", 0, 4) + "}", four), "overflows 64 bits");
  check_refused(file_with("{" + entry("a", "F32", "[2]", 0, 4) + "}", four),
                "tensor 'a' of dtype F32 and shape [2] needs 8 bytes, but its data_offsets [0, 4) span 4");
  check_refused(file_with("{" + entry("a", "BOOL", "[2,3]", 0, 4) + "}", four), "needs 6 bytes");
  // A valid-looking empty tensor whose other dimensions no tensor could hold.
  check_refused(file_with("{" + entry("a", "F32", "[4611686018427387904,0]", 0, 0) + "}"), "tensor 'a' cannot be created");
}

TEST_CASE("safetensors: offsets out of range, reversed, overlapping or leaving gaps") {
  check_refused(file_with("{" + entry("a", "F32", "[2]", 0, 8) + "}", std::string(4, '\0')),
                "tensor 'a' has data_offsets [0, 8) past the end of the file (the data buffer holds 4 bytes");
  check_refused(file_with("{" + entry("a", "F32", "[0]", 18446744073709551615ull, 18446744073709551615ull) + "}"),
                "past the end of the file");
  check_refused(file_with("{" + entry("a", "F32", "[1]", 8, 4) + "}", std::string(8, '\0')),
                "tensor 'a' has data_offsets [8, 4] with begin > end");
  check_refused(file_with("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", std::string(4, '\0')),
                "tensor 'a' has 1 data_offsets; expected two");
  check_refused(file_with("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,4]}}", std::string(4, '\0')),
                "tensor 'a' has more than two data_offsets");
  check_refused(file_with("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,-4]}}", std::string(4, '\0')),
                "the data_offsets of tensor 'a' hold the negative number -4");
  check_refused(file_with("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 4, 12) + "}", std::string(12, '\0')),
                "tensor 'b' [4, 12) overlaps tensor 'a' [0, 8)");
  check_refused(file_with("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 0, 8) + "}", std::string(8, '\0')),
                "overlaps");
  check_refused(file_with("{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("b", "F32", "[1]", 8, 12) + "}", std::string(12, '\0')),
                "a gap of 4 unused bytes lies between tensor 'a' [0, 4) and tensor 'b' [8, 12)");
  check_refused(file_with("{" + entry("a", "F32", "[1]", 4, 8) + "}", std::string(8, '\0')),
                "the first tensor, 'a', starts at data offset 4, not 0");
  check_refused(file_with("{" + entry("a", "F32", "[1]", 0, 4) + "}", std::string(8, '\0')),
                "the tensors end at data offset 4 but the data buffer holds 8 bytes (4 trailing bytes");
  check_refused(file_with("{}", "x"), "1 trailing bytes");
}

TEST_CASE("safetensors: __metadata__ must map strings to strings") {
  check_refused(file_with("{\"__metadata__\":5}"), "__metadata__ is a number, not an object of strings");
  check_refused(file_with("{\"__metadata__\":[\"a\"]}"), "__metadata__ is an array, not an object of strings");
  check_refused(file_with("{\"__metadata__\":{\"k\":1}}"), "__metadata__ maps 'k' to a number, not a string");
  check_refused(file_with("{\"__metadata__\":{\"k\":{\"x\":\"y\"}}}"), "__metadata__ maps 'k' to an object, not a string");
  check_refused(file_with("{\"__metadata__\":{\"k\":null}}"), "__metadata__ maps 'k' to null");
  check_refused(file_with("{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}"), "__metadata__ names 'k' twice");
  check_refused(file_with("{\"__metadata__\":{},\"__metadata__\":{}}"), "the header names '__metadata__' twice");
  const SafetensorsContents ok = decode_safetensors(as_span(file_with("{\"__metadata__\":{\"k\":\"v\",\"\":\"\"}}")), "m");
  CHECK(ok.metadata == std::map<std::string, std::string>{{"k", "v"}, {"", ""}});
}

TEST_CASE("safetensors: BOOL data must be 0 or 1") {
  std::string data = {0, 1, 2};
  check_refused(file_with("{" + entry("m", "BOOL", "[3]", 0, 3) + "}", data), "BOOL tensor 'm' holds the byte 2 at element 2");
}

TEST_CASE("safetensors: long names are shortened in messages") {
  const std::string name(1000, 'n');
  const std::string msg = error_of([&] {
    decode_safetensors(as_span(file_with("{" + entry(name, "F16", "[1]", 0, 2) + "}", "xx")), "m");
  });
  CHECK(msg.find("(1000 bytes)") != std::string::npos);
  CHECK(msg.size() < 400);
}

TEST_CASE("safetensors: missing and unreadable files") {
  TempDir dir;
  CHECK_THROWS_WITH_AS(load_safetensors(dir / "missing.safetensors"), doctest::Contains("missing.safetensors: cannot open"), Error);
  CHECK_THROWS_WITH_AS(load_safetensors(dir.path()), doctest::Contains("not a regular file"), Error);
}
