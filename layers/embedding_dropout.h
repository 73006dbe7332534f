// Embedding and Dropout (Trax's layers/core.py).
//
//   Embedding(vocab_size, d_feature, init = normal(1.0))
//       integer ids of any shape S -> rows of a table [vocab_size, d_feature]: output S + [d_feature],
//       out[..., j] = table[id, j]. Weights {embedding: the table}. The gradient reaches the table: row r gets
//       the sum of the output gradients at every position holding id r.
//       Out-of-range ids (< 0 or >= vocab_size) throw ctrax::Error. Trax clips them into range instead
//       (jnp.take's "clip" mode), which silently maps every bad id (a tokeniser bug, an unreserved padding id)
//       onto the last or first row; misuse should be loud, so ctrax raises.
//   Dropout(rate)
//       Mode::train: y = x * keep / (1 - rate), keep ~ Bernoulli(1 - rate) per element, drawn from the rng
//       passed to apply (the same key gives the same mask); E[y] = x. Every other mode: y = x.
//       rate in [0, 1); rate 1 would divide by zero and zero the signal, so it is rejected.
//
// What it is not for: sparse updates (the table's gradient is a dense tensor of the table's
// shape), or float ids (cast them to an integer dtype first).
#pragma once

#include <cstdint>

#include "initializers.h"
#include "layer.h"

namespace ctrax {

LayerPtr Embedding(int64_t vocab_size, int64_t d_feature, Initializer init = normal_init(1.0),
                   DType dtype = DType::float32);

LayerPtr Dropout(double rate);

}  // namespace ctrax
