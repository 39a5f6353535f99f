// The ETA's cost model (memsweep/eta.hpp) on scripted trial times, and the
// forward FLOP count it rests on.

#include "memsweep/config.hpp"
#include "memsweep/estimate.hpp"
#include "memsweep/eta.hpp"
#include "memsweep/model_spec.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace memsweep {
namespace {

// Each its own configuration (its id), unless a test says otherwise.
TrialCost cost(const std::string& id, const std::string& trainer, const std::string& model, double work,
               int epochs = 1) {
  return TrialCost{id, trainer, trainer + " " + model, epochs, work, id};
}

FinishedTrial ended(TrialCost trial_cost, double wall_seconds, bool ran_to_end = true, int epochs_done = -1) {
  FinishedTrial trial;
  trial.epochs_done = epochs_done >= 0 ? epochs_done : trial_cost.epochs;
  trial.cost = std::move(trial_cost);
  trial.wall_seconds = wall_seconds;
  trial.ran_to_end = ran_to_end;
  return trial;
}

// What the progress lines and `watch` said before the cost model: the mean
// wall time of the finished trials × the trials not finished / workers.
double mean_formula(const EtaInputs& inputs) {
  double seconds = 0.0;
  for (const FinishedTrial& trial : inputs.finished) seconds += trial.wall_seconds;
  const double mean = seconds / static_cast<double>(inputs.finished.size());
  return mean * static_cast<double>(inputs.running.size() + inputs.waiting.size()) / inputs.workers;
}

// ---- forward FLOPs ------------------------------------------------------------

TEST(ForwardFlops, MlpIsTwoPerWeightOfEachLayer) {
  ModelSpec mlp;
  mlp.input = {1, 28, 28};
  mlp.hidden = {128};
  mlp.classes = 10;
  EXPECT_EQ(forward_flops_per_example(mlp), 2u * (784 * 128 + 128 * 10));
}

TEST(ForwardFlops, CnnCountsEachConvolutionAtItsInputSizeThenTheDenseLayers) {
  ModelSpec cnn;
  cnn.input = {1, 28, 28};
  cnn.conv = {{8, true}, {16, true}};
  cnn.hidden = {32};
  cnn.classes = 10;
  const std::uint64_t conv1 = 28 * 28 * 8 * 1 * 9;   // 28x28 outputs of 8 channels, 3x3x1 each
  const std::uint64_t conv2 = 14 * 14 * 16 * 8 * 9;  // after the first pool
  const std::uint64_t dense = 7 * 7 * 16 * 32 + 32 * 10;
  EXPECT_EQ(forward_flops_per_example(cnn), 2 * (conv1 + conv2 + dense));
  // An unpooled block keeps the image: the second convolution costs 4x.
  cnn.conv[0].pool = false;
  EXPECT_EQ(forward_flops_per_example(cnn), 2 * (conv1 + 4 * conv2 + 4 * 7 * 7 * 16 * 32 + 32 * 10));
}

// ---- a trial's predicted work -----------------------------------------------------

TrialSpec synthetic_trial(int epochs) {
  TrialSpec trial;
  trial.dataset.kind = DatasetKind::synthetic;
  trial.dataset.synthetic.train_size = 6000;
  trial.dataset.synthetic.test_size = 1000;
  trial.hidden = {64};
  trial.epochs = epochs;
  trial.id = trial_id(trial);
  return trial;
}

TEST(TrialCost, ThreePassesPerTrainingExampleOnePerTestExampleEachEpoch) {
  const TrialSpec trial = synthetic_trial(2);
  const double forward = static_cast<double>(forward_flops_per_example(model_spec(trial)));
  const TrialCost whole = trial_cost(trial, {});
  EXPECT_EQ(whole.trial_id, trial.id);
  EXPECT_EQ(whole.kind, "memsweep mlp");
  EXPECT_EQ(whole.trainer, "memsweep");
  EXPECT_EQ(whole.epochs, 2);
  EXPECT_DOUBLE_EQ(whole.work, 2 * forward * (3 * 6000 + 1000));
  // The limits cut the splits; a limit beyond the split changes nothing.
  EXPECT_DOUBLE_EQ(trial_cost(trial, {1000, 200}).work, 2 * forward * (3 * 1000 + 200));
  EXPECT_DOUBLE_EQ(trial_cost(trial, {60'000, 0}).work, whole.work);
}

TEST(TrialCost, RealDatasetsUseTheirPublishedSizesAndProgramsTheirTrainer) {
  TrialSpec trial = synthetic_trial(1);
  trial.dataset.kind = DatasetKind::mnist;
  trial.model = ModelKind::cnn;
  trial.channels = {8};
  const double forward = static_cast<double>(forward_flops_per_example(model_spec(trial)));
  EXPECT_DOUBLE_EQ(trial_cost(trial, {}).work, forward * (3 * 60'000 + 10'000));
  trial.program = ProgramSpec{};
  trial.program->name = "torch";
  trial.program->command = {"python3", "train.py", "--model={model}", "--channels={channels}"};
  trial.program->fields = {"channels", "dataset", "model"};
  EXPECT_EQ(trial_cost(trial, {}).kind, "torch cnn");
  EXPECT_EQ(trial_cost(trial, {}).trainer, "torch");
  EXPECT_TRUE(trial_cost(trial, {}).network_known);
  EXPECT_DOUBLE_EQ(trial_cost(trial, {}).work, forward * (3 * 60'000 + 10'000));
}

// Issue 43: a program passed no model (word_language_model over bptt and
// its architecture) was costed as memsweep's default MLP, the same for every
// trial: its FLOPs say nothing, and its kind is its trainer and the params
// that name a variant.
TEST(TrialCost, AProgramPassedNoModelIsCostedByItsEpochsAndItsVariantParams) {
  const SweepSpec sweep = parse_sweep(R"([sweep]
name = "wlm"
[programs.wlm]
command = ["python3", "main.py", "--model", "{arch}", "--bptt", "{bptt}", "--epochs", "{epochs}", "--tied={tied}"]
[defaults]
program = "wlm"
epochs = 2
params = { tied = true }
[grid]
params.arch = ["Transformer", "LSTM"]
params.bptt = [35, 280]
)",
                                      "wlm.toml");
  ASSERT_EQ(sweep.trials.size(), 4u);
  std::map<std::string, std::vector<TrialCost>> by_kind;
  for (const TrialSpec& trial : sweep.trials) {
    const TrialCost cost = trial_cost(trial, {});
    EXPECT_FALSE(cost.network_known);
    EXPECT_DOUBLE_EQ(cost.work, 2.0) << "its epochs";
    by_kind[cost.kind].push_back(cost);
  }
  ASSERT_EQ(by_kind.size(), 2u);
  EXPECT_EQ(by_kind["wlm arch=LSTM tied=true"].size(), 2u);
  EXPECT_EQ(by_kind["wlm arch=Transformer tied=true"].size(), 2u);
}

TEST(TrialCost, RepeatsAndASearchsProbesShareAConfigurationOtherFieldsDoNot) {
  TrialSpec first = synthetic_trial(1);
  TrialSpec repeat = first;
  repeat.repeat = 2;
  repeat.id = trial_id(repeat);
  ASSERT_NE(repeat.id, first.id);
  EXPECT_EQ(trial_cost(repeat, {}).configuration, trial_cost(first, {}).configuration);
  TrialSpec larger_batch = first;
  larger_batch.batch_size = 512;
  EXPECT_NE(trial_cost(larger_batch, {}).configuration, trial_cost(first, {}).configuration);
  TrialSpec program = first;
  program.program = ProgramSpec{};
  program.program->name = "torch";
  EXPECT_NE(trial_cost(program, {}).configuration, trial_cost(first, {}).configuration) << "another trainer";

  TrialSpec probe = larger_batch;
  probe.search = SearchPoint{.search = 3, .probe = 0, .value = 512, .limit_bytes = 1 << 30};
  TrialSpec next_probe = first;
  next_probe.search = SearchPoint{.search = 3, .probe = 1, .value = 32, .limit_bytes = 1 << 30};
  EXPECT_EQ(trial_cost(probe, {}).configuration, trial_cost(next_probe, {}).configuration);
  next_probe.search->search = 4;
  EXPECT_NE(trial_cost(probe, {}).configuration, trial_cost(next_probe, {}).configuration);
}

TEST(TrialCost, PendingCostsFollowTheDispatchOrder) {
  const std::vector<TrialSpec> trials = {synthetic_trial(1), synthetic_trial(3)};
  const std::vector<PendingTrial> pending = {{.index = 1, .attempt = 0}, {.index = 0, .attempt = 2}};
  const std::vector<TrialCost> costs = waiting_costs(trials, pending, {}).first;
  ASSERT_EQ(costs.size(), 2u);
  EXPECT_EQ(costs[0].epochs, 3);
  EXPECT_EQ(costs[1].epochs, 1);
}

// ---- the sweep whose slow trials come last --------------------------------------

// 8 small MLPs (1e9 FLOPs, 1 s each), then 4 CNNs of 20x the work that take
// 30 s each (a CNN's FLOP is slower here), on 2 workers.
constexpr double kMlpWork = 1e9;
constexpr double kCnnWork = 20 * kMlpWork;
constexpr double kMlpSeconds = 1.0;
constexpr double kCnnSeconds = 30.0;

EtaInputs after_the_mlps() {
  EtaInputs inputs;
  inputs.workers = 2;
  for (int i = 0; i < 8; ++i)
    inputs.finished.push_back(ended(cost("m" + std::to_string(i), "memsweep", "mlp", kMlpWork), kMlpSeconds));
  for (int i = 0; i < 4; ++i) inputs.waiting.push_back(cost("c" + std::to_string(i), "memsweep", "cnn", kCnnWork));
  return inputs;
}

TEST(RemainingSeconds, BeforeAnyCnnEndsTheyBorrowTheMlpsRateScaledByTheirWork) {
  const EtaInputs inputs = after_the_mlps();
  // No CNN has finished: the trainer's rate (1e-9 s per FLOP) makes each 20 s;
  // 4 on 2 workers, two rounds: 40 s. The truth is 60 s, the mean 2 s.
  ASSERT_TRUE(remaining_seconds(inputs));
  EXPECT_NEAR(*remaining_seconds(inputs), 40.0, 1e-9);
  EXPECT_NEAR(mean_formula(inputs), 2.0, 1e-9);
}

TEST(RemainingSeconds, OnceACnnEndsItsKindHasItsOwnRate) {
  // The first CNN ended (30 s), the second has run 10 s, two wait.
  EtaInputs inputs = after_the_mlps();
  const TrialCost first = inputs.waiting[0];
  const TrialCost second = inputs.waiting[1];
  inputs.waiting.erase(inputs.waiting.begin(), inputs.waiting.begin() + 2);
  inputs.finished.push_back(ended(first, kCnnSeconds));
  inputs.running.push_back({second, 10.0});

  const std::optional<CostRate> cnn = fitted_rate(inputs.finished, second);
  ASSERT_TRUE(cnn);
  EXPECT_NEAR(cnn->seconds_per_flop, kCnnSeconds / kCnnWork, 1e-20);
  const std::optional<CostRate> mlp = fitted_rate(inputs.finished, cost("m9", "memsweep", "mlp", kMlpWork));
  EXPECT_NEAR(mlp->seconds_per_flop, kMlpSeconds / kMlpWork, 1e-20);

  // By hand: the running CNN has 30 - 10 = 20 s left on one worker; the
  // third CNN starts on the idle one (ends at 30), the fourth when the
  // running one ends (20 + 30 = 50). The sweep ends in 50 s, as it will.
  const double truth = 50.0;
  ASSERT_TRUE(remaining_seconds(inputs));
  EXPECT_NEAR(*remaining_seconds(inputs), truth, 1e-9);
  // The mean formula: (8 x 1 + 30) / 9 x 3 / 2 = 6.3 s, an eighth of it.
  EXPECT_NEAR(mean_formula(inputs), 38.0 / 9 * 3 / 2, 1e-9);
  EXPECT_LT(mean_formula(inputs), truth / 5);
}

TEST(RemainingSeconds, TheLastLongTrialIsNotSpreadOverIdleWorkers) {
  // One CNN left and 4 workers: 30 s, not 30 / 4.
  EtaInputs inputs = after_the_mlps();
  inputs.workers = 4;
  inputs.finished.push_back(ended(inputs.waiting[0], kCnnSeconds));
  inputs.waiting.erase(inputs.waiting.begin(), inputs.waiting.begin() + 3);
  EXPECT_NEAR(*remaining_seconds(inputs), kCnnSeconds, 1e-9);
}

TEST(RemainingSeconds, ARunningTrialPastItsPredictionRunsOnForAShareOfItsOverrun) {
  EtaInputs inputs = after_the_mlps();
  inputs.finished.push_back(ended(inputs.waiting[0], kCnnSeconds));
  inputs.running.push_back({inputs.waiting[1], 45.0});
  inputs.waiting.clear();
  // Predicted 30 s, running for 45: not ended, so not 0 s left; it has
  // overrun by 15 s and is expected to overrun by a share of that again.
  EXPECT_NEAR(*remaining_seconds(inputs), kOverrunShare * 15.0, 1e-9);
  EXPECT_GT(kOverrunShare * 15.0, kMinRunningSeconds);
  // At its prediction, the least there is; before it, the prediction's rest.
  inputs.running[0].elapsed_seconds = 30.0;
  EXPECT_NEAR(*remaining_seconds(inputs), kMinRunningSeconds, 1e-9);
  inputs.running[0].elapsed_seconds = 20.0;
  EXPECT_NEAR(*remaining_seconds(inputs), 10.0, 1e-9);
  // No jump as it nears its prediction: 2 s before it, 2 s left.
  inputs.running[0].elapsed_seconds = 28.0;
  EXPECT_NEAR(*remaining_seconds(inputs), 2.0, 1e-9);
}

// The user's sweep of issue 31: a program (the PyTorch MNIST example) over
// batch size and learning rate, 2 workers. The small batches end first; the
// two batch-1024 trials take far longer (their FLOPs, counted from fields
// the program does not use, are the same as everyone's). They ran for 129 s
// after the others ended, with "ETA 0s" shown all along.
TEST(RemainingSeconds, TheLastSlowProgramTrialsNeverShowZeroWhileTheyRun) {
  std::vector<FinishedTrial> finished;
  for (int i = 0; i < 6; ++i)
    finished.push_back(ended(cost("small" + std::to_string(i), "pytorch-mnist", "mlp", 1e9), 60.0));
  const std::vector<RunningTrial> running = {{cost("large1", "pytorch-mnist", "mlp", 1e9), 70.0},
                                             {cost("large2", "pytorch-mnist", "mlp", 1e9), 75.0}};
  for (double elapsed = 0.0; elapsed <= 129.0; elapsed += 1.0) {
    std::vector<RunningTrial> now = running;
    for (RunningTrial& trial : now) trial.elapsed_seconds += elapsed;
    const std::optional<double> left = remaining_seconds(finished, now, {}, 2);
    ASSERT_TRUE(left);
    EXPECT_GT(*left, 0.0) << elapsed;
    EXPECT_NE(eta_text(left), "0s") << elapsed;
  }
}

TEST(RemainingSeconds, ARepeatIsExpectedToTakeWhatItsConfigurationTook) {
  // Two configurations of one kind and the same work: batch 8 took 40 s,
  // batch 512 took 4 s. Their repeats wait; the kind's rate would say 22 s each.
  TrialCost small_batch = cost("b8", "memsweep", "cnn", 1e10);
  small_batch.configuration = "memsweep batch=8";
  TrialCost large_batch = cost("b512", "memsweep", "cnn", 1e10);
  large_batch.configuration = "memsweep batch=512";
  const std::vector<FinishedTrial> finished = {ended(small_batch, 40.0), ended(large_batch, 4.0)};
  TrialCost small_repeat = small_batch;
  small_repeat.trial_id = "b8-repeat";
  EXPECT_NEAR(*remaining_seconds(finished, {}, std::vector<TrialCost>{small_repeat}, 1), 40.0, 1e-9);
  TrialCost large_repeat = large_batch;
  large_repeat.trial_id = "b512-repeat";
  EXPECT_NEAR(*remaining_seconds(finished, {}, std::vector<TrialCost>{large_repeat}, 1), 4.0, 1e-9);
  // A configuration not seen yet: its kind's, (40 + 4) / 2e10 per FLOP.
  TrialCost other = cost("b64", "memsweep", "cnn", 1e10);
  other.configuration = "memsweep batch=64";
  EXPECT_NEAR(*remaining_seconds(finished, {}, std::vector<TrialCost>{other}, 1), 22.0, 1e-9);
}

TEST(EtaText, UnknownWithoutAnEstimateAndWholeSecondsRoundedUp) {
  EXPECT_EQ(eta_text(std::nullopt), "unknown");
  EXPECT_EQ(eta_text(0.0), "0s");
  EXPECT_EQ(eta_text(0.01), "1s");
  EXPECT_EQ(eta_text(59.2), "1m00s");
  EXPECT_EQ(eta_text(3 * 3600.0 + 1), "3h00m");
}

TEST(RemainingSeconds, NothingFinishedMeansNoEstimateAndNothingLeftMeansZero) {
  EtaInputs inputs = after_the_mlps();
  inputs.finished.clear();
  EXPECT_FALSE(remaining_seconds(inputs));
  // A trial that failed at its start did no work: still nothing to fit.
  inputs.finished.push_back(ended(cost("f", "memsweep", "mlp", kMlpWork), 0.05, false, 0));
  EXPECT_FALSE(remaining_seconds(inputs));

  EtaInputs done;
  EXPECT_EQ(remaining_seconds(done), 0.0);
}

TEST(RemainingSeconds, TrialsThatEndedEarlyCountWithTheEpochsTheyDid) {
  std::vector<FinishedTrial> finished;
  finished.push_back(ended(cost("ok", "memsweep", "mlp", 4e9, 4), 4.0));
  // Failed at start and skipped over its budget: no epoch, left out.
  finished.push_back(ended(cost("failed", "memsweep", "mlp", 4e9, 4), 0.02, false, 0));
  finished.push_back(ended(cost("skipped", "memsweep", "mlp", 4e9, 4), 0.0, false, 0));
  // Diverged after 1 of 4 epochs: a quarter of its work in a quarter of the time.
  finished.push_back(ended(cost("diverged", "memsweep", "mlp", 4e9, 4), 1.0, false, 1));
  const std::optional<CostRate> rate = fitted_rate(finished, cost("next", "memsweep", "mlp", 4e9, 4));
  ASSERT_TRUE(rate);
  EXPECT_NEAR(rate->seconds_per_flop, 1e-9, 1e-20);
  // A program that reports no epochs but ended `ok` did all of its work.
  finished.push_back(ended(cost("p", "torch", "mlp", 2e9), 6.0, true, 0));
  EXPECT_NEAR(fitted_rate(finished, cost("q", "torch", "mlp", 1e9))->seconds_per_flop, 3e-9, 1e-20);
}

TEST(RemainingSeconds, AKindWithoutFinishedTrialsBorrowsItsTrainersRateThenEveryones) {
  std::vector<FinishedTrial> finished;
  finished.push_back(ended(cost("a", "memsweep", "mlp", 1e9), 1.0));
  finished.push_back(ended(cost("b", "torch", "mlp", 1e9), 5.0));
  // torch cnn: torch's own rate, not memsweep's.
  EXPECT_NEAR(fitted_rate(finished, cost("c", "torch", "cnn", 1e9))->seconds_per_flop, 5e-9, 1e-20);
  // jax: no trial of it yet, everyone's: 6 s over 2e9 FLOPs.
  EXPECT_NEAR(fitted_rate(finished, cost("d", "jax", "cnn", 1e9))->seconds_per_flop, 3e-9, 1e-20);
}

// Issue 43: long Transformer and short LSTM program trials (2 workers).
// Taking the first Transformer's time for every trial said 26 min at the
// start of a 7 min 44 s run. A kind without an ended trial now leaves the
// ETA unknown; once each kind has one, each kind is timed by its own.
TEST(RemainingSeconds, AProgramKindWithoutAnEndedTrialLeavesTheEtaUnknownThenEachHasItsOwn) {
  const auto program_trial = [](const std::string& id, const std::string& kind) {
    TrialCost cost{id, "wlm", "wlm arch=" + kind, 1, 1.0, "wlm " + id};
    cost.network_known = false;
    return cost;
  };
  std::vector<FinishedTrial> finished = {ended(program_trial("t1", "Transformer"), 90.0)};
  std::vector<TrialCost> waiting;
  for (int i = 0; i < 8; ++i) waiting.push_back(program_trial("l" + std::to_string(i), "LSTM"));
  waiting.push_back(program_trial("t2", "Transformer"));
  // Before: 9 trials at the Transformer's 90 s on 2 workers, 450 s; the
  // true figure 8 x 10 s + 90 s spread, 90 s.
  EXPECT_FALSE(remaining_seconds(finished, {}, waiting, 2)) << "no LSTM has ended";
  finished.push_back(ended(program_trial("l-first", "LSTM"), 10.0));
  const std::optional<double> left = remaining_seconds(finished, {}, waiting, 2);
  ASSERT_TRUE(left);
  // Worker A: 4 LSTMs (40 s) then t2 (90 s) = 130 s; B: 4 LSTMs = 40 s.
  EXPECT_NEAR(*left, 130.0, 1e-9);
  // A program whose network memsweep counts still borrows another kind's rate.
  TrialCost counted{"c", "torch", "torch cnn", 1, 1e9, "torch c"};
  EXPECT_TRUE(remaining_seconds(finished, {}, std::vector<TrialCost>{counted}, 2));
}

// The ETA is never past what the trials' time limits allow.
TEST(CappedByTimeLimits, TheLatestEndIfEveryTrialTookItsLimit) {
  const std::vector<TimeLimited> running = {{10.0, 4.0}};
  const std::vector<TimeLimited> waiting(3, TimeLimited{10.0, 0.0});
  // Worker A frees at 6 s, B at 0: B 10, A 16, B 20.
  EXPECT_DOUBLE_EQ(*capped_by_time_limits(6.5e10, running, waiting, 2), 20.0);
  EXPECT_DOUBLE_EQ(*capped_by_time_limits(12.0, running, waiting, 2), 12.0) << "below the cap: unchanged";
  EXPECT_FALSE(capped_by_time_limits(std::nullopt, running, waiting, 2)) << "no estimate is not made one";
  std::vector<TimeLimited> one_unlimited = waiting;
  one_unlimited.push_back({std::nullopt, 0.0});
  EXPECT_DOUBLE_EQ(*capped_by_time_limits(6.5e10, running, one_unlimited, 2), 6.5e10) << "a trial without a limit";
}

TEST(RemainingSeconds, ProcessStartIsAFixedCostPerTrial) {
  // 0.5 s to start, 1 s to train 1e9 FLOPs: a trial of 3e9 takes 3.5 s.
  FinishedTrial measured = ended(cost("a", "memsweep", "mlp", 1e9), 1.5);
  measured.start_seconds = 0.5;
  EtaInputs inputs;
  inputs.finished = {measured};
  inputs.waiting = {cost("b", "memsweep", "mlp", 3e9)};
  const std::optional<CostRate> rate = fitted_rate(inputs.finished, inputs.waiting[0]);
  EXPECT_NEAR(rate->fixed_seconds, 0.5, 1e-12);
  EXPECT_NEAR(rate->seconds_per_flop, 1e-9, 1e-20);
  EXPECT_NEAR(*remaining_seconds(inputs), 3.5, 1e-9);
}

// ---- SweepEta: the one ETA the progress lines and watch show -------------------

TEST(SweepEta, FewTrialsWaitingIsWorkedOutAtEveryCall) {
  EtaInputs inputs = after_the_mlps();  // 4 CNNs waiting: 40 s
  SweepEta eta;
  EXPECT_NEAR(*eta.seconds_left(inputs.finished, inputs.running, inputs.waiting, inputs.workers, 100.0), 40.0, 1e-9);
  // Two of them gone a tenth of a second later: worked out again, one round.
  inputs.waiting.resize(2);
  EXPECT_NEAR(*eta.seconds_left(inputs.finished, inputs.running, inputs.waiting, inputs.workers, 100.1), 20.0, 1e-9);
}

TEST(SweepEta, ManyTrialsWaitingIsWorkedOutOnceASecondAndCountedDownBetween) {
  const EtaInputs few = after_the_mlps();
  std::vector<TrialCost> waiting(2 * SweepEta::kWaitingWorkedOutEachTime, few.waiting[0]);
  SweepEta eta;
  const double first = *eta.seconds_left(few.finished, {}, waiting, 2, 100.0);
  EXPECT_NEAR(first, *remaining_seconds(few.finished, {}, waiting, 2), 1e-9);
  // Half the trials gone within the second: still the first one, less the time since.
  waiting.resize(SweepEta::kWaitingWorkedOutEachTime + 1);
  EXPECT_NEAR(*eta.seconds_left(few.finished, {}, waiting, 2, 100.25), first - 0.25, 1e-9);
  // A second on: worked out anew.
  EXPECT_NEAR(*eta.seconds_left(few.finished, {}, waiting, 2, 101.0), *remaining_seconds(few.finished, {}, waiting, 2),
              1e-9);
}

TEST(SweepEta, NothingToFitKeepsTheLastEstimateForTheCountdown) {
  const EtaInputs few = after_the_mlps();
  const std::vector<TrialCost> waiting(SweepEta::kWaitingWorkedOutEachTime + 1, few.waiting[0]);
  SweepEta eta;
  EXPECT_FALSE(eta.seconds_left({}, {}, waiting, 2, 100.0)) << "no finished trial: no estimate, none kept";
  EXPECT_FALSE(eta.seconds_left({}, {}, waiting, 2, 100.5));
  const double first = *eta.seconds_left(few.finished, {}, waiting, 2, 101.0);
  EXPECT_NEAR(*eta.seconds_left(few.finished, {}, waiting, 2, 101.5), first - 0.5, 1e-9);
}

}  // namespace
}  // namespace memsweep
