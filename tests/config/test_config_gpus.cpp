// gpus_per_trial and {gpu}: where a trial runs, not what it is; the
// default that gives a program one GPU where the node has some and
// memsweep's CPU trainer none.

#include "memsweep/config.hpp"
#include "memsweep/program.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace memsweep {
namespace {

using ::testing::ElementsAre;

TrialSpec only_trial(const std::string& text) {
  const SweepSpec sweep = parse_sweep(text, "g.toml");
  EXPECT_EQ(sweep.trials.size(), 1U);
  return sweep.trials.at(0);
}

TEST(GpusPerTrial, IsWhereATrialRunsNotWhatItIsSoItsIdStaysTheSame) {
  const std::string program = "[[trial]]\nprogram = ['sh', 'train.sh']\n";
  const TrialSpec plain = only_trial(program);
  const TrialSpec two = only_trial(program + "gpus_per_trial = 2\n");
  EXPECT_EQ(plain.id, two.id);
  EXPECT_FALSE(plain.gpus_per_trial.has_value());
  ASSERT_TRUE(two.gpus_per_trial.has_value());
  EXPECT_EQ(*two.gpus_per_trial, 2);
  const SweepSpec merged = parse_sweep(program + "gpus_per_trial = 1\n" + program + "gpus_per_trial = 2\n", "g.toml");
  EXPECT_EQ(merged.trials.size(), 1U) << "one trial given twice";
}

TEST(GpusPerTrial, DefaultsToOneForAProgramOnAGpuNodeAndNoneForTheCpuTrainer) {
  const TrialSpec program = only_trial("[[trial]]\nprogram = ['sh', 'train.sh']\n");
  EXPECT_EQ(program.gpus_needed(true), 1);
  EXPECT_EQ(program.gpus_needed(false), 0) << "a node without GPUs runs programs on the CPU";
  const TrialSpec builtin = only_trial("[[trial]]\n");
  EXPECT_EQ(builtin.gpus_needed(true), 0);
  const TrialSpec cpu_program = only_trial("[defaults]\ngpus_per_trial = 0\n[[trial]]\nprogram = ['sh', 'train.sh']\n");
  EXPECT_EQ(cpu_program.gpus_needed(true), 0) << "[defaults] says so";
  const TrialSpec pair = only_trial("[[trial]]\nprogram = ['sh', 'train.sh']\ngpus_per_trial = 2\n");
  EXPECT_EQ(pair.gpus_needed(false), 2) << "asked for, even where the node has none: the run refuses it";
}

TEST(GpuLimit, IsASizeOrTheWholeDeviceAndNotPartOfTheTrial) {
  const std::string program = "[[trial]]\nprogram = ['sh', 'train.sh']\n";
  const TrialSpec sized = only_trial(program + "gpu_limit = '40GiB'\n");
  ASSERT_TRUE(sized.gpu_limit_bytes.has_value());
  EXPECT_EQ(*sized.gpu_limit_bytes, 40ULL << 30);
  const TrialSpec whole = only_trial(program + "gpu_limit = 'device'\n");
  EXPECT_EQ(whole.gpu_limit_bytes, TrialSpec::kWholeDevice);
  EXPECT_EQ(sized.id, only_trial(program).id);
}

TEST(GpuPlaceholder, AProgramThatNamesItNeedsAGpuAndReadsItsOwnOrdinals) {
  const TrialSpec trial = only_trial("[[trial]]\nprogram = ['train.sh', '--device=cuda:{gpu}']\n");
  ASSERT_TRUE(trial.program.has_value());
  EXPECT_TRUE(trial.program->uses_gpu);
  EXPECT_EQ(trial.gpus_needed(false), 1) << "{gpu} asks for a device";
  ProgramRunValues values;
  values.gpu = "0";
  EXPECT_THAT(program_invocation(trial, values).argv, ElementsAre("train.sh", "--device=cuda:0"));
  EXPECT_FALSE(only_trial("[[trial]]\nprogram = ['train.sh']\n").program->uses_gpu);
}

}  // namespace
}  // namespace memsweep
