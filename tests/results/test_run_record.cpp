// run_record.hpp: what a resume takes from the run before it, what it
// refuses to change, and the command that continues a stopped sweep.

#include "memsweep/run_record.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

namespace memsweep {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

RunRow stored_run() {
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

// A resume given nothing takes every measured option from the stored run.
TEST(ReuseStoredOptions, NothingGivenTakesEverything) {
  RunRow given;  // the defaults
  set_fixed(given.data_dirs, "/home/user/data");
  set_fixed(given.counter_source, "auto");
  const RunRow resumed = reuse_stored_options(given, stored_run(), GivenOptions{});
  EXPECT_EQ(get_fixed(resumed.data_dirs), "/scratch/data");
  EXPECT_EQ(resumed.max_train_examples, 1000);
  EXPECT_EQ(resumed.max_test_examples, 200);
  EXPECT_EQ(resumed.threads, 2);
  EXPECT_EQ(get_fixed(resumed.counter_source), "papi");
  EXPECT_EQ(resumed.mem_budget, 2LL << 30);
  EXPECT_EQ(resumed.trial_timeout, 90.0);
  EXPECT_EQ(resumed.flush_interval, 5.0);
  EXPECT_TRUE(measurement_changes(stored_run(), resumed).empty());
}

// What is given wins; the measured ones are then reported, each with both
// values; the data folder and the budget may differ freely.
TEST(ReuseStoredOptions, GivenOptionsWinAndChangesAreNamed) {
  RunRow given;
  set_fixed(given.data_dirs, "/node-local/data");
  given.max_train_examples = 500;
  given.threads = 2;
  given.mem_budget = 1LL << 30;
  GivenOptions which;
  which.data_dir = true;
  which.max_train_examples = true;
  which.threads = true;
  which.mem_budget = true;
  const RunRow resumed = reuse_stored_options(given, stored_run(), which);
  EXPECT_EQ(get_fixed(resumed.data_dirs), "/node-local/data");
  EXPECT_EQ(resumed.mem_budget, 1LL << 30);
  EXPECT_EQ(resumed.max_test_examples, 200);  // not given: the stored one

  const std::vector<OptionChange> changes = measurement_changes(stored_run(), resumed);
  ASSERT_EQ(changes.size(), 1u);  // threads 2 == 2; data dir and budget are not measured options
  EXPECT_EQ(changes[0].option, "--max-train-examples");
  EXPECT_EQ(changes[0].stored, "1000");
  EXPECT_EQ(changes[0].given, "500");
  EXPECT_TRUE(changes[0].allowed);
  EXPECT_EQ(changes_text(changes, 0), "--max-train-examples 1000 (run 0) -> 500");
}

TEST(MeasurementChanges, CounterSourceIsNeverAllowed) {
  RunRow resumed = stored_run();
  set_fixed(resumed.counter_source, "kernel");
  resumed.threads = 0;
  const std::vector<OptionChange> changes = measurement_changes(stored_run(), resumed);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].option, "--threads");
  EXPECT_THAT(changes[0].given, HasSubstr("0 (the CPUs"));
  EXPECT_EQ(changes[1].option, "--counter-source");
  EXPECT_FALSE(changes[1].allowed);
}

TEST(ContinueCommand, MpirunWithEveryOptionThatMatters) {
  const std::string command =
      continue_command(stored_run(), "out dir/results.h5", CommandContext{.as_root = true, .cpus = 2});
  EXPECT_EQ(command,
            "mpirun -np 3 --allow-run-as-root --oversubscribe /opt/memsweep/bin/memsweep run 'mnist mem.toml' -o "
            "'out dir/results.h5' --resume --data-dir /scratch/data --max-train-examples 1000 --max-test-examples "
            "200 --threads 2 --mem-budget 2147483648 --trial-timeout 90s --counter-source papi --flush-interval 5");
}

TEST(ContinueCommand, LaunchersAndParts) {
  RunRow run;
  set_fixed(run.sweep_file, "s.toml");
  run.ranks = 1;
  EXPECT_EQ(continue_command(run, "s.h5", {}), "memsweep run s.toml -o s.h5 --resume");
  run.ranks = 4;
  set_fixed(run.launcher, "srun");
  set_fixed(run.split_by, "dataset");
  run.part = 2;
  set_fixed(run.output_option, "out/{part}.h5");
  EXPECT_EQ(continue_command(run, "out/cifar10.h5", {}),
            "srun -n 4 memsweep run s.toml --split-by dataset --part 2 -o 'out/{part}.h5' --resume");
  set_fixed(run.launcher, "");  // several ranks, launcher not known: the standard one
  EXPECT_THAT(continue_command(run, "x.h5", {}), HasSubstr("mpiexec -n 4 memsweep run"));
  // Several data folders (from MEMSWEEP_DATA) are not one --data-dir: the resume reuses them as stored.
  set_fixed(run.data_dirs, "/a:/b");
  EXPECT_THAT(continue_command(run, "x.h5", {}), Not(HasSubstr("--data-dir")));
}

TEST(ShellWord, QuotesOnlyWhatAShellWouldRead) {
  EXPECT_EQ(shell_word("results.h5"), "results.h5");
  EXPECT_EQ(shell_word("/a/b-c_d:e=f"), "/a/b-c_d:e=f");
  EXPECT_EQ(shell_word("it's here"), "'it'\\''s here'");
  EXPECT_EQ(shell_word("$HOME"), "'$HOME'");
  EXPECT_EQ(shell_word(""), "''");
}

TEST(LauncherFromEnvironment, OpenMpiThenSrun) {
  ::unsetenv("OMPI_MCA_orte_local_daemon_uri");
  ::unsetenv("OMPI_MCA_orte_hnp_uri");
  ::unsetenv("SLURM_STEP_ID");
  ::unsetenv("SLURM_PROCID");
  EXPECT_EQ(launcher_from_environment(), "");
  ::setenv("SLURM_STEP_ID", "0", 1);
  ::setenv("SLURM_PROCID", "1", 1);
  EXPECT_EQ(launcher_from_environment(), "srun");
  ::setenv("OMPI_MCA_orte_hnp_uri", "1.0;tcp://127.0.0.1:1", 1);  // mpirun inside a Slurm job
  EXPECT_EQ(launcher_from_environment(), "mpirun");
  ::unsetenv("OMPI_MCA_orte_hnp_uri");
  ::unsetenv("SLURM_STEP_ID");
  ::unsetenv("SLURM_PROCID");
}

}  // namespace
}  // namespace memsweep
