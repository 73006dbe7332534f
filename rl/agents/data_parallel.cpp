// The RL agents' exchanges of data-parallel training (see data_parallel.h).
#include "data_parallel.h"

#include <bit>
#include <cstring>

#include "../../base/error.h"
#include "../../io/safetensors.h"
#include "../../layers/normalization.h"

namespace ctrax {

namespace {

constexpr uint64_t kRankKeyTag = 0x72616e6b;  // "rank": folded into ranks' task keys

// Every leaf's values as doubles (exact for the float and integer dtypes a state holds).
std::vector<double> flat_values(const Tree& tree) {
  std::vector<double> out;
  for (const Tensor& leaf : tree.leaves()) {
    const std::vector<double> v = leaf.to(Device::cpu()).to_vector<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// `like`'s structure with leaves of its shapes, dtypes and devices read from values[offset...].
Tree tree_from_values(const Tree& like, const double* values) {
  std::vector<Tensor> leaves;
  for (const Tensor& leaf : like.leaves()) {
    std::vector<double> v(values, values + leaf.numel());
    values += leaf.numel();
    leaves.push_back(from_vector(v, leaf.shape()).to(leaf.dtype()).to(leaf.device()));
  }
  return like.with_leaves(leaves);
}

// A manifest field as a string and back (doubles by their bits, so nothing is rounded).
std::string encode_field(const io::ManifestValue& value) {
  if (const bool* b = std::get_if<bool>(&value)) return *b ? "b1" : "b0";
  if (const int64_t* i = std::get_if<int64_t>(&value)) return "i" + std::to_string(*i);
  if (const double* d = std::get_if<double>(&value)) return "d" + std::to_string(std::bit_cast<uint64_t>(*d));
  return "s" + std::get<std::string>(value);
}

io::ManifestValue decode_field(const std::string& text) {
  CTRAX_REQUIRE(!text.empty(), "gather_checkpoint_entries: an empty field encoding");
  const std::string rest = text.substr(1);
  switch (text[0]) {
    case 'b': return rest == "1";
    case 'i': return static_cast<int64_t>(std::stoll(rest));
    case 'd': return std::bit_cast<double>(static_cast<uint64_t>(std::stoull(rest)));
    case 's': return rest;
    default: CTRAX_THROW("gather_checkpoint_entries: unknown field encoding '", text, "'");
  }
}

}  // namespace

RLTaskOptions rank_task_options(RLTaskOptions job, const dist::Communicator& comm) {
  return rank_task_options(std::move(job), comm.rank(), comm.size());
}

int checkpoint_rank_count(const std::filesystem::path& output_dir) {
  const io::CheckpointDirectory directory(output_dir / "checkpoints", 1, io::CheckpointDirectory::Access::read_only);
  const std::optional<io::Checkpoint> latest = directory.load_latest();
  if (!latest || !latest->fields.count("agent/n_ranks")) return 1;
  return static_cast<int>(latest->int_field("agent/n_ranks"));
}

RLTaskOptions rank_task_options(RLTaskOptions job, int r, int n) {
  CTRAX_REQUIRE(n >= 1 && r >= 0 && r < n, "rank_task_options: rank ", r, " is not in a group of ", n);
  CTRAX_REQUIRE(job.n_envs % n == 0, "rank_task_options: n_envs ", job.n_envs, " does not split evenly over ", n,
                " ranks (each rank steps n_envs / ranks copies)");
  job.n_envs /= n;
  job.initial_trajectories = dist::rank_share(job.initial_trajectories, r, n);
  if (r > 0) job.key = fold_in(fold_in(job.key, kRankKeyTag), static_cast<uint64_t>(r));
  return job;
}

std::string rank_task_prefix(int rank) { return rank == 0 ? "task/" : "rank" + std::to_string(rank) + "/task/"; }

Tree combine_collect_state(dist::Communicator& comm, const Tree& base, const Tree& local) {
  const std::vector<double> values = flat_values(local);
  const std::vector<double> all = comm.allgather(values);
  std::vector<Tree> ranks;
  for (int r = 0; r < comm.size(); ++r) ranks.push_back(tree_from_values(local, all.data() + r * values.size()));
  return combine_rank_statistics(base, ranks);
}

void check_replicated(dist::Communicator& comm, const Tree& tree, const std::string& what) {
  std::string bytes;
  for (const Tensor& leaf : tree.leaves()) {
    const Tensor c = leaf.to(Device::cpu()).contiguous();
    bytes.append(static_cast<const char*>(c.raw_data()), static_cast<size_t>(c.numel()) * c.element_size());
  }
  dist::check_same_on_every_rank(comm, std::span(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()),
                                 what.c_str());
}

std::vector<double> gather_values(dist::Communicator& comm, const std::vector<double>& local) {
  std::string bytes(local.size() * sizeof(double), '\0');
  if (!local.empty()) std::memcpy(bytes.data(), local.data(), bytes.size());
  std::vector<double> out;
  for (const std::string& rank : dist::allgather_bytes(comm, bytes)) {
    const size_t n = rank.size() / sizeof(double);
    const size_t at = out.size();
    out.resize(at + n);
    if (n > 0) std::memcpy(out.data() + at, rank.data(), n * sizeof(double));
  }
  return out;
}

Metrics mean_over_ranks(dist::Communicator& comm, const Metrics& local) {
  std::string names;
  std::vector<double> values;
  for (const auto& [name, value] : local) {
    names += name + '\n';
    values.push_back(value);
  }
  dist::check_same_on_every_rank(comm, std::span(reinterpret_cast<const unsigned char*>(names.data()), names.size()),
                                 "the names of the epoch's metrics");
  dist::allreduce_sum(comm, std::span<double>(values), /*divide_by_size=*/true);
  Metrics out;
  size_t i = 0;
  for (const auto& [name, value] : local) out[name] = values[i++];
  return out;
}

void gather_checkpoint_entries(dist::Communicator& comm, std::map<std::string, Tensor>& tensors,
                               io::ManifestFields& fields) {
  std::map<std::string, std::string> metadata;
  for (const auto& [name, value] : fields) metadata[name] = encode_field(value);
  std::map<std::string, Tensor> cpu;
  for (const auto& [name, tensor] : tensors) cpu.emplace(name, tensor.to(Device::cpu()));
  const std::vector<std::string> all = comm.gather_bytes_at_root(io::encode_safetensors(cpu, metadata));
  for (int r = 1; r < static_cast<int>(all.size()); ++r) {
    const std::string& bytes = all[static_cast<size_t>(r)];
    io::SafetensorsContents contents = io::decode_safetensors(
        std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "rank " + std::to_string(r));
    for (auto& [name, tensor] : contents.tensors) {
      CTRAX_REQUIRE(!tensors.count(name), "gather_checkpoint_entries: rank ", r, " sent '", name,
                    "', which another rank sent too");
      tensors.emplace(name, std::move(tensor));
    }
    for (const auto& [name, text] : contents.metadata) {
      CTRAX_REQUIRE(!fields.count(name), "gather_checkpoint_entries: rank ", r, " sent the field '", name,
                    "', which another rank sent too");
      fields[name] = decode_field(text);
    }
  }
}

}  // namespace ctrax
