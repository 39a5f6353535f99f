// run_record.hpp: the command that continues a stopped sweep.

#include "memsweep/run_record.hpp"

#include "stored_run.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

namespace memsweep {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ContinueCommand, MpirunWithEveryOptionThatMatters) {
  const std::string command =
      continue_command(run_with_every_option(), "out dir/results.h5", CommandContext{.as_root = true, .cpus = 2});
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
