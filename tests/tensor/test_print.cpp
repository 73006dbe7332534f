// Tests of Tensor::to_string() and operator<< (tensor/print.cpp): exact strings for each
// dtype, rank 0, empty and undefined tensors, nesting, line wrapping, summarisation of large
// tensors and non-contiguous views. Printing is not an op of op_list.h.
#include <cmath>
#include <limits>
#include <sstream>

#include "test_util.h"

using namespace ctrax;

TEST_CASE("print: float32 matrix, the documented example") {
  const Tensor t = tensor<float>({1.0f, 2.5f, 3.0f, 4.0f}, {2, 2});
  CHECK(t.to_string() ==
        "tensor([[1.0000, 2.5000],\n"
        "        [3.0000, 4.0000]], dtype=float32, shape=[2, 2])");
  std::ostringstream out;
  out << t;
  CHECK(out.str() == t.to_string());
}

TEST_CASE("print: floats share one notation and width") {
  CHECK(tensor<double>({-1.5, 0.0, 2.25}).to_string() ==
        "tensor([-1.5000,  0.0000,  2.2500], dtype=float64, shape=[3])");
  // scientific when the smallest nonzero magnitude is below 1e-4 ...
  CHECK(tensor<double>({1e-5, 1.0}).to_string() == "tensor([1.0000e-05, 1.0000e+00], dtype=float64, shape=[2])");
  // ... the largest is 1e8 or more, or they span more than a factor 1000
  CHECK(tensor<float>({1e9f}).to_string() == "tensor([1.0000e+09], dtype=float32, shape=[1])");
  CHECK(tensor<double>({-1e10, 1.0}).to_string() == "tensor([-1.0000e+10,  1.0000e+00], dtype=float64, shape=[2])");
  CHECK(tensor<double>({1.0, 2000.0}).to_string() == "tensor([1.0000e+00, 2.0000e+03], dtype=float64, shape=[2])");
  CHECK(tensor<double>({1.0, 1000.0}).to_string() == "tensor([   1.0000, 1000.0000], dtype=float64, shape=[2])");
  // zeros do not count as "small"
  CHECK(tensor<float>({0.0f, 0.5f}).to_string() == "tensor([0.0000, 0.5000], dtype=float32, shape=[2])");
  // nan and inf are spelled out and padded like the numbers; they do not affect the notation
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(tensor<float>({std::nanf(""), inf, -inf, 1.0f}).to_string() ==
        "tensor([   nan,    inf,   -inf, 1.0000], dtype=float32, shape=[4])");
  CHECK(tensor<float>({std::nanf(""), inf}).to_string() == "tensor([nan, inf], dtype=float32, shape=[2])");
}

TEST_CASE("print: integers and bools") {
  CHECK(tensor<int32_t>({1, -20, 300, 4}, {2, 2}).to_string() ==
        "tensor([[  1, -20],\n"
        "        [300,   4]], dtype=int32, shape=[2, 2])");
  CHECK(tensor<int64_t>({5, 123456789012}).to_string() == "tensor([           5, 123456789012], dtype=int64, shape=[2])");
  CHECK(tensor<int64_t>({std::numeric_limits<int64_t>::min()}).to_string() ==
        "tensor([-9223372036854775808], dtype=int64, shape=[1])");
  CHECK(tensor<bool>({true, false, true}).to_string() == "tensor([ true, false,  true], dtype=bool, shape=[3])");
}

TEST_CASE("print: rank 0, empty and undefined tensors") {
  CHECK(scalar_tensor(2.5).to_string() == "tensor(2.5000, dtype=float32, shape=[])");
  CHECK(scalar_tensor(-7, DType::int64).to_string() == "tensor(-7, dtype=int64, shape=[])");
  CHECK(scalar_tensor(1, DType::boolean).to_string() == "tensor(true, dtype=bool, shape=[])");
  CHECK(scalar_tensor(std::nan(""), DType::float64).to_string() == "tensor(nan, dtype=float64, shape=[])");
  CHECK(zeros({0, 3}).to_string() == "tensor([], dtype=float32, shape=[0, 3])");
  CHECK(zeros({0}, DType::int64).to_string() == "tensor([], dtype=int64, shape=[0])");
  CHECK(Tensor().to_string() == "tensor(undefined)");
  std::ostringstream out;
  out << Tensor();
  CHECK(out.str() == "tensor(undefined)");
}

TEST_CASE("print: rank 3 separates blocks with a blank line") {
  CHECK(arange(8).reshape({2, 2, 2}).to_string() ==
        "tensor([[[0, 1],\n"
        "         [2, 3]],\n"
        "\n"
        "        [[4, 5],\n"
        "         [6, 7]]], dtype=int64, shape=[2, 2, 2])");
  CHECK(arange(3).reshape({3, 1}).to_string() ==
        "tensor([[0],\n"
        "        [1],\n"
        "        [2]], dtype=int64, shape=[3, 1])");
}

TEST_CASE("print: long rows wrap at 80 columns") {
  CHECK(arange(0, 20, 1, DType::float32).to_string() ==
        "tensor([ 0.0000,  1.0000,  2.0000,  3.0000,  4.0000,  5.0000,  6.0000,  7.0000,\n"
        "         8.0000,  9.0000, 10.0000, 11.0000, 12.0000, 13.0000, 14.0000, 15.0000,\n"
        "        16.0000, 17.0000, 18.0000, 19.0000], dtype=float32, shape=[20])");
}

TEST_CASE("print: more than 1000 elements are summarised with ...") {
  CHECK(arange(2000).to_string() == "tensor([   0,    1,    2, ..., 1997, 1998, 1999], dtype=int64, shape=[2000])");
  CHECK(arange(1000, 2000, 0.5, DType::float32).to_string() ==
        "tensor([1000.0000, 1000.5000, 1001.0000, ..., 1998.5000, 1999.0000, 1999.5000], dtype=float32, "
        "shape=[2000])");
  CHECK(arange(2000).reshape({40, 50}).to_string() ==
        "tensor([[   0,    1,    2, ...,   47,   48,   49],\n"
        "        [  50,   51,   52, ...,   97,   98,   99],\n"
        "        [ 100,  101,  102, ...,  147,  148,  149],\n"
        "        ...,\n"
        "        [1850, 1851, 1852, ..., 1897, 1898, 1899],\n"
        "        [1900, 1901, 1902, ..., 1947, 1948, 1949],\n"
        "        [1950, 1951, 1952, ..., 1997, 1998, 1999]], dtype=int64, shape=[40, 50])");
  // axes of at most 6 are shown in full even when summarising
  const std::string tall = arange(2004).reshape({334, 6}).to_string();
  CHECK(tall.find("[   0,    1,    2,    3,    4,    5],\n") != std::string::npos);
  CHECK(tall.find("        ...,\n") != std::string::npos);
  CHECK(tall.find("[1998, 1999, 2000, 2001, 2002, 2003]], dtype=int64, shape=[334, 6])") != std::string::npos);
  // exactly 1000 elements are printed in full
  CHECK(arange(1000).to_string().find("...") == std::string::npos);
}

TEST_CASE("print: non-contiguous views print their logical values") {
  const Tensor m = tensor<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(m.transpose(0, 1).to_string() ==
        "tensor([[1, 4],\n"
        "        [2, 5],\n"
        "        [3, 6]], dtype=int64, shape=[3, 2])");
  CHECK(arange(10).slice(0, 1, 10, 3).to_string() == "tensor([1, 4, 7], dtype=int64, shape=[3])");
  CHECK(tensor<float>({1.0f, -2.0f}).expand({2, 2}).to_string() ==
        "tensor([[ 1.0000, -2.0000],\n"
        "        [ 1.0000, -2.0000]], dtype=float32, shape=[2, 2])");
  const Tensor nc = ctrax::test::non_contiguous(tensor<double>({0.5, 1.5, 2.5, 3.5}, {2, 2}));
  REQUIRE_FALSE(nc.is_contiguous());
  CHECK(nc.to_string() ==
        "tensor([[0.5000, 1.5000],\n"
        "        [2.5000, 3.5000]], dtype=float64, shape=[2, 2])");
  // a summarised non-contiguous view: the transpose of a 50 x 40 matrix
  const std::string big = arange(2000).reshape({50, 40}).transpose(0, 1).to_string();
  CHECK(big.rfind("tensor([[   0,   40,   80, ..., 1880, 1920, 1960],\n", 0) == 0);
  CHECK(big.find("[  39,   79,  119, ..., 1919, 1959, 1999]], dtype=int64, shape=[40, 50])") != std::string::npos);
}
