// Embedding and Dropout (see embedding_dropout.h).
#include "../tensor/compile.h"
#include "embedding_dropout.h"

#include <string>

#include "../base/error.h"
#include "../tensor/ops.h"

namespace ctrax {

namespace {

class EmbeddingLayer final : public Layer {
 public:
  EmbeddingLayer(int64_t vocab_size, int64_t d_feature, Initializer init, DType dtype)
      : Layer("Embedding_" + std::to_string(vocab_size) + "_" + std::to_string(d_feature), 1, 1),
        vocab_size_(vocab_size), d_feature_(d_feature), init_(std::move(init)), dtype_(dtype) {
    CTRAX_REQUIRE(vocab_size_ >= 1, "Embedding: vocab_size must be >= 1, got ", vocab_size_);
    CTRAX_REQUIRE(d_feature_ >= 1, "Embedding: d_feature must be >= 1, got ", d_feature_);
    CTRAX_REQUIRE(init_ != nullptr, "Embedding: the initializer is empty");
    CTRAX_REQUIRE(is_floating(dtype_), "Embedding: the table dtype must be a float dtype, got ", dtype_name(dtype_));
  }

 protected:
  std::pair<Tree, Tree> init_weights_and_state(const Signature& input, Key rng, LayerPass&) override {
    check_ids_dtype(input[0].dtype);
    Tree::Dict w;
    w["embedding"] = init_(rng, Shape{vocab_size_, d_feature_}, dtype_);
    return {Tree(std::move(w)), Tree()};
  }

  LayerResult forward(const Stack& inputs, const Tree& weights, const Tree& state, Key, Mode,
                      LayerPass&) const override {
    const Tensor& ids = inputs[0];
    check_ids_dtype(ids.dtype());
    const Tensor& table = weights["embedding"].leaf();
    if (table.rank() != 2 || table.size(0) != vocab_size_)
      fail("the embedding table has shape " + ctrax::to_string(table.shape()) +
           ", expected [" + std::to_string(vocab_size_) + ", d]");
    if (ids.numel() > 0) {
      // check_value rather than item(): the check stays in a compiled training step.
      auto in_range = [this](double id) {
        if (id >= 0 && id < static_cast<double>(vocab_size_)) return std::string();
        return name() + ": id " + std::to_string(static_cast<int64_t>(id)) + " is out of range for a vocabulary of " +
                             std::to_string(vocab_size_) + " (ids must be in [0, " + std::to_string(vocab_size_) + "))";
      };
      check_value(min(ids), in_range);
      check_value(max(ids), in_range);
    }
    Shape out_shape = ids.shape();
    out_shape.push_back(table.size(1));
    const Tensor rows = index_select(table, 0, ids.reshape(Shape{ids.numel()}));
    return {{rows.reshape(out_shape)}, state};
  }

 private:
  void check_ids_dtype(DType dtype) const {
    if (!is_integer(dtype)) fail(std::string("ids have dtype ") + dtype_name(dtype) + ", expected an integer dtype");
  }

  int64_t vocab_size_;
  int64_t d_feature_;
  Initializer init_;
  DType dtype_;
};

class DropoutLayer final : public Layer {
 public:
  explicit DropoutLayer(double rate) : Layer("Dropout", 1, 1), rate_(rate) {
    CTRAX_REQUIRE(rate_ >= 0.0 && rate_ < 1.0, "Dropout: rate must be in [0, 1), got ", rate_);
  }

 protected:
  std::pair<Tree, Tree> init_weights_and_state(const Signature& input, Key, LayerPass&) override {
    check_dtype(input[0].dtype);
    return {Tree(), Tree()};
  }

  LayerResult forward(const Stack& inputs, const Tree&, const Tree& state, Key rng, Mode mode,
                      LayerPass&) const override {
    const Tensor& x = inputs[0];
    // Checked in every mode, so a model that works in eval cannot start failing in train.
    check_dtype(x.dtype());
    if (mode != Mode::train || rate_ == 0.0) return {{x}, state};
    // mask = keep / (1 - rate): a constant, so the gradient of y = x * mask is the mask itself.
    const Tensor mask = mul(bernoulli(rng, x.shape(), 1.0 - rate_, x.device()).to(x.dtype()), 1.0 / (1.0 - rate_));
    return {{mul(x, mask)}, state};
  }

 private:
  void check_dtype(DType dtype) const {
    if (!is_floating(dtype)) fail(std::string("input dtype ") + dtype_name(dtype) + " is not a float dtype");
  }

  double rate_;
};

}  // namespace

LayerPtr Embedding(int64_t vocab_size, int64_t d_feature, Initializer init, DType dtype) {
  return std::make_shared<EmbeddingLayer>(vocab_size, d_feature, std::move(init), dtype);
}

LayerPtr Dropout(double rate) { return std::make_shared<DropoutLayer>(rate); }

}  // namespace ctrax
