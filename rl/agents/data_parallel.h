// The RL agents' side of data-parallel training (AgentOptions::communicator; design and the
// arithmetic of scaling: docs/scaling.md): how a job's task is split over its ranks, and the
// few things the ranks exchange besides gradients (the collection's statistics, metrics,
// evaluation episodes, checkpoints of every rank's task).
//
// Every function here is a collective unless it says otherwise: every rank of the communicator
// calls it at the same point with the same arguments' shapes, and gets the same bits back.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../../dist/communicator.h"
#include "../../io/checkpoint.h"
#include "../../optim/metrics_log.h"
#include "../../tensor/tree.h"
#include "../learning/task.h"

namespace ctrax {

// Rank `comm.rank()`'s task options for a job described by `job` (not a collective): n_envs and
// initial_trajectories split over the ranks (n_envs must divide evenly: ctrax::Error otherwise);
// the key folded with the rank for ranks >= 1, so every rank plays other episodes and rank 0
// plays those of a single-process run.
RLTaskOptions rank_task_options(RLTaskOptions job, const dist::Communicator& comm);
// The same for rank `rank` of n_ranks (e.g. rank 0's task, to evaluate a job's checkpoint in one
// process: a read-only agent restores rank 0's task).
RLTaskOptions rank_task_options(RLTaskOptions job, int rank, int n_ranks);
// The number of ranks that wrote the newest checkpoint of an agent's output directory (its
// agent/n_ranks; 1 when it has none, or no checkpoint).
int checkpoint_rank_count(const std::filesystem::path& output_dir);

// The prefix of rank r's task in a job's checkpoint: "task/" for rank 0 (as a single process
// writes it), "rank<r>/task/" for the others.
std::string rank_task_prefix(int rank);

// A model state after every rank collected from `base` on its own (combine_rank_statistics of
// every rank's `local`).
Tree combine_collect_state(dist::Communicator& comm, const Tree& base, const Tree& local);

// Throws ctrax::Error (naming `what` and the ranks) unless `tree`'s leaves are the same bytes on
// every rank.
void check_replicated(dist::Communicator& comm, const Tree& tree, const std::string& what);

// Every rank's values, concatenated in rank order (lengths may differ).
std::vector<double> gather_values(dist::Communicator& comm, const std::vector<double>& local);

// The mean over the ranks of each metric; every rank must report the same names (else
// ctrax::Error).
Metrics mean_over_ranks(dist::Communicator& comm, const Metrics& local);

// Every rank's checkpoint entries (tensors and fields), each under the names it was given, added
// to rank 0's (the other ranks' are left as they were): for rank 0's checkpoint of the whole job.
void gather_checkpoint_entries(dist::Communicator& comm, std::map<std::string, Tensor>& tensors,
                               io::ManifestFields& fields);

}  // namespace ctrax
