// The trial fields memory_plan and recompute_every (issue 32): read from
// the sweep file as grid axes, part of a trial's id only where they are not
// the default (so that existing sweeps keep their ids), handed to the
// trainer through training_spec(), to programs as placeholders, and a field
// a sweep can be split by.

#include "memsweep/config.hpp"
#include "memsweep/program.hpp"
#include "memsweep/sweep_split.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace memsweep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TrialSpec only_trial(const SweepSpec& sweep) {
  EXPECT_EQ(sweep.trials.size(), 1u);
  return sweep.trials.at(0);
}

// The id of `[[trial]]` with nothing set, recorded before memory plans
// existed (tests/config/test_config_programs.cpp, BuiltInIdsAreUnchanged).
constexpr char kDefaultTrialId[] = "06c07f17d3e2";

TEST(MemoryPlanFields, DefaultsAreKeepAndTheDefaultSegmentLength) {
  const TrialSpec trial = only_trial(parse_sweep("[[trial]]\n", "a.toml"));
  EXPECT_EQ(trial.memory_plan, MemoryPlan::keep);
  EXPECT_EQ(trial.recompute_every, kRecomputeEveryDefault);
  EXPECT_EQ(trial.id, kDefaultTrialId);
}

TEST(MemoryPlanFields, KeepWrittenOutKeepsTheIdOfATrialThatNeverNamedIt) {
  // Written out, or with a segment length that `keep` does not use: the
  // same trial, so the same id as before plans existed.
  EXPECT_EQ(only_trial(parse_sweep("[[trial]]\nmemory_plan = 'keep'\n", "a.toml")).id, kDefaultTrialId);
  EXPECT_EQ(only_trial(parse_sweep("[[trial]]\nmemory_plan = 'keep'\nrecompute_every = 3\n", "a.toml")).id,
            kDefaultTrialId);
  EXPECT_EQ(only_trial(parse_sweep("[[trial]]\nrecompute_every = 0\n", "a.toml")).id, kDefaultTrialId);
  const TrialSpec keep = only_trial(parse_sweep("[[trial]]\nmemory_plan = 'keep'\n", "a.toml"));
  EXPECT_THAT(keep.canonical_text(), Not(HasSubstr("memory_plan")));
  EXPECT_THAT(keep.canonical_text(), Not(HasSubstr("recompute_every")));
}

TEST(MemoryPlanFields, EachPlanIsAnotherTrial) {
  const SweepSpec sweep =
      parse_sweep("[defaults]\nhidden = [32]\n[grid]\nmemory_plan = ['keep', 'reuse', 'recompute']\n", "grid.toml");
  ASSERT_EQ(sweep.trials.size(), 3u);
  const std::vector<TrialSpec> trials = sweep.trials.list();
  EXPECT_EQ(trials[0].memory_plan, MemoryPlan::keep);
  EXPECT_EQ(trials[1].memory_plan, MemoryPlan::reuse);
  EXPECT_EQ(trials[2].memory_plan, MemoryPlan::recompute);
  const std::set<std::string> ids{trials[0].id, trials[1].id, trials[2].id};
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_THAT(trials[1].canonical_text(), HasSubstr(";memory_plan=reuse"));
  EXPECT_THAT(trials[2].canonical_text(), HasSubstr(";memory_plan=recompute"));
  // The keep trial of the grid is the same trial as one never naming a plan.
  EXPECT_EQ(trials[0].id, only_trial(parse_sweep("[[trial]]\nhidden = [32]\n", "one.toml")).id);
}

TEST(MemoryPlanFields, TheSegmentLengthIsPartOfARecomputeTrialOnly) {
  const auto id_of = [](const std::string& fields) {
    return only_trial(parse_sweep("[[trial]]\n" + fields, "r.toml")).id;
  };
  const std::string recompute = "memory_plan = 'recompute'\n";
  // 0 is the default written out.
  EXPECT_EQ(id_of(recompute), id_of(recompute + "recompute_every = 0\n"));
  EXPECT_NE(id_of(recompute), id_of(recompute + "recompute_every = 2\n"));
  EXPECT_NE(id_of(recompute + "recompute_every = 2\n"), id_of(recompute + "recompute_every = 3\n"));
  // reuse has no segments: the length is read and ignored, as sgd ignores momentum.
  EXPECT_EQ(id_of("memory_plan = 'reuse'\n"), id_of("memory_plan = 'reuse'\nrecompute_every = 2\n"));
  const TrialSpec reuse = only_trial(parse_sweep("[[trial]]\nmemory_plan = 'reuse'\nrecompute_every = 2\n", "r.toml"));
  EXPECT_EQ(reuse.effective_recompute_every(), kRecomputeEveryDefault);
  EXPECT_EQ(training_spec(reuse).recompute_every, kRecomputeEveryDefault);
}

TEST(MemoryPlanFields, AGridCrossingPlansWithSegmentLengthsRunsEachTrialOnceWithOneNote) {
  // keep and reuse ignore recompute_every, so the grid's 6 points are 4 trials.
  const SweepSpec sweep = parse_sweep(
      "[[trial]]\nhidden = [8]\n[[trial]]\nhidden = [8]\n"
      "[grid]\nmemory_plan = ['keep', 'reuse', 'recompute']\nrecompute_every = [0, 2]\n",
      "g.toml");
  std::set<std::string> plans;
  for (const TrialSpec& trial : sweep.trials.list())
    plans.insert(std::string(memory_plan_name(trial.memory_plan)) + ":" +
                 std::to_string(trial.effective_recompute_every()));
  EXPECT_EQ(plans, (std::set<std::string>{"keep:0", "reuse:0", "recompute:0", "recompute:2"}));
  EXPECT_EQ(sweep.trials.size(), 5u);  // the first [[trial]] is another trial
  ASSERT_EQ(sweep.notes.size(), 2u) << ::testing::PrintToString(sweep.notes);
  // The [[trial]] written twice is a mistake worth its own note; the grid's are one.
  EXPECT_THAT(sweep.notes[0], HasSubstr("g.toml:3 trial[1] defines the same trial as g.toml:1 trial[0]"));
  EXPECT_THAT(sweep.notes[1], HasSubstr("2 trial definitions set recompute_every under memory_plan keep or reuse"));
  EXPECT_THAT(sweep.notes[1], HasSubstr("grid[1]"));
}

TEST(MemoryPlanFields, TheTrainerGetsBoth) {
  const TrialSpec trial =
      only_trial(parse_sweep("[[trial]]\nmemory_plan = 'recompute'\nrecompute_every = 4\n", "t.toml"));
  const TrainingSpec spec = training_spec(trial);
  EXPECT_EQ(spec.memory_plan, MemoryPlan::recompute);
  EXPECT_EQ(spec.recompute_every, 4);
  EXPECT_EQ(training_spec(only_trial(parse_sweep("[[trial]]\nmemory_plan = 'reuse'\n", "t.toml"))).memory_plan,
            MemoryPlan::reuse);
}

TEST(MemoryPlanFields, ARandomSearchDrawsPlansAndSegmentLengths) {
  const SweepSpec sweep = parse_sweep(
      "[random]\ncount = 40\nmemory_plan = { choice = ['reuse', 'recompute'] }\n"
      "recompute_every = { int_uniform = [1, 3] }\n",
      "random.toml");
  std::set<MemoryPlan> plans;
  std::set<int> lengths;
  for (const TrialSpec& trial : sweep.trials) {
    plans.insert(trial.memory_plan);
    lengths.insert(trial.recompute_every);
    EXPECT_NE(trial.memory_plan, MemoryPlan::keep);
    EXPECT_GE(trial.recompute_every, 1);
    EXPECT_LE(trial.recompute_every, 3);
  }
  EXPECT_EQ(plans.size(), 2u);
  EXPECT_EQ(lengths.size(), 3u);
}

TEST(MemoryPlanFields, SummaryTextNamesAPlanOtherThanKeep) {
  const SweepSpec sweep =
      parse_sweep("[defaults]\nrecompute_every = 2\n[grid]\nmemory_plan = ['keep', 'reuse', 'recompute']\n", "s.toml");
  const std::vector<TrialSpec> trials = sweep.trials.list();
  EXPECT_THAT(trials[0].summary_text(), Not(HasSubstr("plan")));
  EXPECT_THAT(trials[1].summary_text(), HasSubstr("plan=reuse"));
  EXPECT_THAT(trials[1].summary_text(), Not(HasSubstr("recompute_every")));
  EXPECT_THAT(trials[2].summary_text(), HasSubstr("plan=recompute recompute_every=2"));
}

TEST(MemoryPlanFields, ProgramsReceiveThemAsPlaceholders) {
  const std::vector<std::string> names = builtin_placeholder_names();
  EXPECT_TRUE(std::binary_search(names.begin(), names.end(), "memory_plan"));
  EXPECT_TRUE(std::binary_search(names.begin(), names.end(), "recompute_every"));

  const SweepSpec sweep = parse_sweep(R"([defaults]
program = ["train.py", "--memory-plan", "{memory_plan}", "--segments", "{recompute_every}"]
recompute_every = 3
[grid]
memory_plan = ["keep", "recompute"]
)",
                                      "p.toml");
  const std::vector<TrialSpec> trials = sweep.trials.list();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_THAT(program_invocation(trials[0], {}).argv,
              ElementsAre("train.py", "--memory-plan", "keep", "--segments", "0"));
  EXPECT_THAT(program_invocation(trials[1], {}).argv,
              ElementsAre("train.py", "--memory-plan", "recompute", "--segments", "3"));
  // Set by the file, and named: both are fields the program shows.
  EXPECT_TRUE(trials[1].shows_field("memory_plan"));
  EXPECT_TRUE(trials[1].shows_field("recompute_every"));
  EXPECT_NE(trials[0].id, trials[1].id);
}

TEST(MemoryPlanFields, AProgramThatNeverNamesThePlanDoesNotShowIt) {
  const TrialSpec trial =
      only_trial(parse_sweep("[[trial]]\nprogram = ['train.py', '--lr', '{learning_rate}']\n", "p.toml"));
  EXPECT_FALSE(trial.shows_field("memory_plan"));
  EXPECT_FALSE(trial.shows_field("recompute_every"));
  // Named in a text only: shown.
  const TrialSpec named = only_trial(parse_sweep("[[trial]]\nprogram = ['train.py', '{memory_plan}']\n", "p.toml"));
  EXPECT_TRUE(named.shows_field("memory_plan"));
  EXPECT_FALSE(named.shows_field("recompute_every"));
}

TEST(MemoryPlanFields, ASweepSplitsByPlan) {
  const SweepSpec sweep =
      parse_sweep("[grid]\nmemory_plan = ['keep', 'reuse', 'recompute']\nbatch_size = [8, 16]\n", "split.toml");
  const std::vector<SweepPart> parts = split_sweep(sweep, "memory_plan");
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].label, "memory_plan-keep");
  EXPECT_EQ(parts[1].value, "reuse");
  EXPECT_EQ(parts[2].label, "memory_plan-recompute");
  for (const SweepPart& part : parts) {
    ASSERT_EQ(part.trials.size(), 2u);
    for (const TrialSpec& trial : part.trials) EXPECT_EQ(memory_plan_name(trial.memory_plan), part.value);
  }
}

TEST(MemoryPlanFields, TrialFromFieldsTakesThem) {
  const TrialSpec trial = trial_from_fields(
      {{"memory_plan", std::string("recompute")}, {"recompute_every", std::int64_t{5}}}, "command line");
  EXPECT_EQ(trial.memory_plan, MemoryPlan::recompute);
  EXPECT_EQ(trial.recompute_every, 5);
  EXPECT_THAT(trial.canonical_text(), HasSubstr(";memory_plan=recompute;recompute_every=5"));
}

}  // namespace
}  // namespace memsweep
