#pragma once
// The sweep the watch tests follow: its text, as a results file keeps it,
// its trials and a header for its file.

#include "memsweep/config.hpp"
#include "memsweep/store.hpp"
#include "store/store_fixtures.hpp"

#include <vector>

namespace memsweep::testing {

// Four trials: 2 learning rates x 2 batch sizes, 3 epochs each.
inline constexpr char kFollowSweepText[] = R"([sweep]
name = "follow-test"
seed = 3

[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 8, 8], classes = 4, train_size = 64, test_size = 16 }
epochs = 3

[grid]
learning_rate = [0.1, 0.01]
batch_size = [8, 16]
)";

inline std::vector<TrialSpec> follow_sweep_trials() {
  return parse_sweep(kFollowSweepText, "follow-test.toml").trials.list();
}

// Its header: 3 ranks on node-0..2.
inline FileHeader follow_header() {
  FileHeader header = example_header();
  header.sweep_name = "follow-test";
  header.sweep_text = kFollowSweepText;
  header.part.clear();
  header.ranks = 3;
  header.hosts = {"node-0", "node-1", "node-2"};
  header.planned_trials = 4;
  return header;
}

}  // namespace memsweep::testing
