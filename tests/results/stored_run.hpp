// A /runs row with every option a resume may take or a continue command
// names set, for the tests of both.

#pragma once

#include "memsweep/run_record.hpp"

namespace memsweep {

inline RunRow run_with_every_option() {
  RunRow run;
  run.run = 0;
  run.ranks = 3;
  set_fixed(run.data_dirs, "/scratch/data");
  run.max_train_examples = 1000;
  run.max_test_examples = 200;
  run.threads = 2;
  set_fixed(run.counter_source, "papi");
  run.mem_budget = 2LL << 30;
  run.trial_timeout = 90.0;
  run.flush_interval = 5.0;
  set_fixed(run.launcher, "mpirun");
  set_fixed(run.executable, "/opt/memsweep/bin/memsweep");
  set_fixed(run.sweep_file, "mnist mem.toml");
  return run;
}

}  // namespace memsweep
