// Every kind of bad sweep file is rejected with the file, the line and the
// key, and says what was expected.

#include "memsweep/config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace memsweep {
namespace {

using ::testing::HasSubstr;

struct BadSweep {
  std::string name;
  std::string text;
  int line;
  std::string key;
  std::string expected;  // part of the message saying what was expected
};

void PrintTo(const BadSweep& c, std::ostream* os) { *os << c.name; }

class SweepFileErrors : public ::testing::TestWithParam<BadSweep> {};

TEST_P(SweepFileErrors, NamesFileLineKeyAndExpectation) {
  const BadSweep& c = GetParam();
  try {
    parse_sweep(c.text, "bad.toml");
    FAIL() << "expected a ConfigError for:\n" << c.text;
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.file(), "bad.toml");
    EXPECT_EQ(error.line(), c.line) << error.what();
    EXPECT_EQ(error.key(), c.key) << error.what();
    const std::string prefix = c.key.empty() ? "bad.toml:" + std::to_string(c.line) + ": "
                                             : "bad.toml:" + std::to_string(c.line) + ": " + c.key + ": ";
    EXPECT_THAT(error.what(), ::testing::StartsWith(prefix));
    EXPECT_THAT(error.what(), HasSubstr(c.expected));
  }
}

const BadSweep kCases[] = {
    // unknown keys, at every level
    {"unknown_section", "[sweeps]\nname = 'x'\n", 1, "sweeps", "unknown key; expected one of: sweep, sampler"},
    {"unknown_sweep_key", "[sweep]\nname = 'x'\nreapeats = 2\n[[trial]]\n", 3, "sweep.reapeats",
     "expected one of: name, seed, repeats"},
    {"unknown_trial_key", "[[trial]]\nhidden = [4]\nlearning_rte = 0.1\n", 3, "trial[0].learning_rte",
     "unknown key; expected one of: dataset"},
    {"unknown_default_key", "[defaults]\nbatch = 4\n[[trial]]\n", 2, "defaults.batch", "unknown key"},
    {"unknown_sampler_key", "[sampler]\ninterval = 5\n[[trial]]\n", 2, "sampler.interval",
     "expected one of: interval_ms, events, counter_source"},
    {"unknown_counter_source", "[sampler]\ncounter_source = 'pmu'\n[[trial]]\n", 2, "sampler.counter_source",
     "expected \"auto\", \"papi\" or \"kernel\", found \"pmu\""},
    {"counter_source_not_a_string", "[sampler]\ncounter_source = 1\n[[trial]]\n", 2, "sampler.counter_source",
     "expected a string"},
    {"unknown_synthetic_key", "[[trial]]\ndataset = 'synthetic'\nsynthetic = { shape = [1, 8, 8], colours = 3 }\n", 3,
     "trial[0].synthetic.colours", "unknown key"},
    {"depth_in_trial", "[[trial]]\ndepth = 3\n", 2, "trial[0].depth", "unknown key"},
    // wrong types
    {"batch_as_string", "[[trial]]\nbatch_size = '64'\n", 2, "trial[0].batch_size",
     "expected a whole number from 1 to 1048576, found the string \"64\""},
    {"epochs_as_float", "[[trial]]\nepochs = 2.5\n", 2, "trial[0].epochs", "expected a whole number"},
    {"lr_as_string", "[[trial]]\nlearning_rate = 'fast'\n", 2, "trial[0].learning_rate", "expected a number"},
    {"hidden_not_list", "[[trial]]\nhidden = 128\n", 2, "trial[0].hidden", "expected an array, found the integer 128"},
    {"hidden_element_string", "[[trial]]\nhidden = [64, 'x']\n", 2, "trial[0].hidden[1]", "expected a whole number"},
    {"sweep_not_table", "sweep = 3\n[[trial]]\n", 1, "sweep", "expected a table"},
    {"name_not_string", "[sweep]\nname = 5\n[[trial]]\n", 2, "sweep.name", "expected a string"},
    {"events_not_strings", "[sampler]\nevents = [1]\n[[trial]]\n", 2, "sampler.events", "expected a string"},
    {"grid_not_list", "[grid]\nbatch_size = 64\n", 2, "grid.batch_size", "expected an array"},
    // impossible values
    {"batch_zero", "[[trial]]\nbatch_size = 0\n", 2, "trial[0].batch_size", "from 1 to 1048576, found 0"},
    {"batch_negative", "[defaults]\nbatch_size = -4\n[[trial]]\n", 2, "defaults.batch_size", "found -4"},
    {"lr_negative", "[[trial]]\nlearning_rate = -0.1\n", 2, "trial[0].learning_rate", "expected a number > 0"},
    {"lr_zero", "[[trial]]\nlearning_rate = 0.0\n", 2, "trial[0].learning_rate", "expected a number > 0, found 0"},
    {"lr_nan", "[[trial]]\nlearning_rate = nan\n", 2, "trial[0].learning_rate", "expected a finite number"},
    {"lr_inf", "[[trial]]\nlearning_rate = inf\n", 2, "trial[0].learning_rate", "expected a finite number"},
    {"epochs_zero", "[[trial]]\nepochs = 0\n", 2, "trial[0].epochs", "from 1 to 100000, found 0"},
    {"empty_hidden_mlp", "[[trial]]\nmodel = 'mlp'\nhidden = []\n", 3, "trial[0].hidden",
     "an MLP needs at least one hidden layer"},
    {"empty_hidden_from_defaults", "[defaults]\nhidden = []\n[[trial]]\nepochs = 2\n", 2, "defaults.hidden",
     "an MLP needs at least one hidden layer"},
    {"too_many_hidden", "[[trial]]\nhidden = [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]\n", 2, "trial[0].hidden",
     "expected at most 16 hidden layers, found 17"},
    {"zero_width", "[[trial]]\nhidden = [64, 0]\n", 2, "trial[0].hidden[1]", "from 1 to 1000000, found 0"},
    {"unknown_dataset", "[[trial]]\ndataset = 'imagenet'\n", 2, "trial[0].dataset",
     "unknown dataset \"imagenet\"; expected one of: mnist, fashion-mnist, cifar-10, synthetic"},
    {"unknown_model", "[[trial]]\nmodel = 'transformer'\n", 2, "trial[0].model", "expected one of: mlp, cnn, alexnet"},
    {"unknown_optimizer", "[[trial]]\noptimizer = 'rmsprop'\n", 2, "trial[0].optimizer",
     "expected one of: sgd, momentum, adam"},
    {"momentum_one", "[[trial]]\noptimizer = 'momentum'\nmomentum = 1.0\n", 3, "trial[0].momentum",
     "expected a number ≥ 0 and < 1"},
    {"cnn_without_channels", "[[trial]]\nmodel = 'cnn'\n", 1, "trial[0].channels",
     "a CNN needs at least one convolution block"},
    {"cnn_too_deep_for_mnist", "[[trial]]\ndataset = 'mnist'\nmodel = 'cnn'\nchannels = [8, 8, 8, 8, 8]\n", 4,
     "trial[0].channels",
     "5 pooling blocks are too many for a 28x28 input: each 2x2 pooling halves it, so at most 4 fit"},
    {"alexnet_too_small", "[[trial]]\nmodel = 'alexnet'\nsynthetic = { shape = [3, 4, 4] }\n", 2, "trial[0].model",
     "3 pooling blocks are too many for a 4x4 input"},
    {"synthetic_bad_shape", "[[trial]]\nsynthetic = { shape = [28, 28] }\n", 2, "trial[0].synthetic.shape",
     "expected [channels, height, width]"},
    {"synthetic_one_class", "[[trial]]\nsynthetic = { classes = 1 }\n", 2, "trial[0].synthetic.classes", "from 2 to"},
    {"bad_budget", "[[trial]]\nmem_budget = 'lots'\n", 2, "trial[0].mem_budget", "a size such as \"2GiB\""},
    {"bad_timeout", "[[trial]]\ntimeout = '30 minutes'\n", 2, "trial[0].timeout",
     "a duration: seconds (90), or with units ms, s, m, h, d"},
    {"zero_timeout", "[[trial]]\ntimeout = 0\n", 2, "trial[0].timeout", "found the integer 0"},
    {"repeats_zero", "[sweep]\nrepeats = 0\n[[trial]]\n", 2, "sweep.repeats", "from 1 to 10000, found 0"},
    {"empty_name", "[sweep]\nname = ''\n[[trial]]\n", 2, "sweep.name", "expected a non-empty name"},
    {"interval_zero", "[sampler]\ninterval_ms = 0\n[[trial]]\n", 2, "sampler.interval_ms", "from 1 to 600000"},
    {"event_twice", "[sampler]\nevents = ['PAPI_L1_DCM', 'PAPI_L1_DCM']\n[[trial]]\n", 2, "sampler.events",
     "listed twice"},
    {"no_trials", "[sweep]\nname = 'empty'\n", 1, "", "the sweep defines no trials"},
    // grid
    {"grid_empty_list", "[grid]\nbatch_size = []\n", 2, "grid.batch_size", "non-empty array"},
    {"grid_bad_value", "[grid]\nbatch_size = [16, 0]\n", 2, "grid.batch_size", "found 0"},
    {"grid_unknown_key", "[grid]\nbatchsize = [16]\n", 2, "grid.batchsize", "unknown key"},
    {"grid_depth_without_width", "[grid]\ndepth = [1, 2]\n", 2, "grid.depth", "add `width`"},
    {"grid_depth_and_hidden", "[grid]\ndepth = [1]\nwidth = [8]\nhidden = [[4]]\n", 4, "grid.hidden",
     "either `hidden` or `depth` and `width`"},
    {"grid_depth_too_deep", "[grid]\ndepth = [17]\nwidth = [8]\n", 2, "grid.depth", "from 1 to 16"},
    {"grid_nothing", "[grid]\n", 1, "grid", "expected at least one field to vary"},
    // random
    {"random_without_count", "[random]\nlearning_rate = { uniform = [0.1, 0.2] }\n", 1, "random",
     "missing key `count`"},
    {"random_count_zero", "[random]\ncount = 0\n", 2, "random.count", "from 1 to 100000000, found 0"},
    {"random_uniform_for_whole", "[random]\ncount = 2\nepochs = { uniform = [1, 3] }\n", 3, "random.epochs",
     "`uniform` draws real numbers, and epochs takes whole numbers; use int_uniform or choice"},
    {"random_int_uniform_for_real", "[random]\ncount = 2\nlearning_rate = { int_uniform = [1, 3] }\n", 3,
     "random.learning_rate", "`int_uniform` draws whole numbers"},
    {"random_uniform_for_name", "[random]\ncount = 2\ndataset = { uniform = [1, 3] }\n", 3, "random.dataset",
     "use choice"},
    {"random_bounds_reversed", "[random]\ncount = 2\nlearning_rate = { uniform = [0.2, 0.1] }\n", 3,
     "random.learning_rate", "expected low < high, found [0.2, 0.1]"},
    {"random_bounds_invalid", "[random]\ncount = 2\nlearning_rate = { uniform = [-1, 0.1] }\n", 3,
     "random.learning_rate", "expected a number > 0, found -1"},
    {"random_log_uniform_zero", "[random]\ncount = 2\nmomentum = { log_uniform = [0.0, 0.5] }\n", 3, "random.momentum",
     "log_uniform needs low > 0"},
    {"random_bounds_not_pair", "[random]\ncount = 2\nbatch_size = { int_uniform = [1, 2, 3] }\n", 3,
     "random.batch_size", "expected [low, high], found 3 values"},
    {"random_empty_choice", "[random]\ncount = 2\ndataset = { choice = [] }\n", 3, "random.dataset",
     "non-empty array to choose from"},
    {"random_bad_choice", "[random]\ncount = 2\ndataset = { choice = ['mnist', 'svhn'] }\n", 3, "random.dataset",
     "unknown dataset \"svhn\""},
    {"random_width_without_depth", "[random]\ncount = 2\nwidth = { int_uniform = [5, 50] }\n", 3, "random.width",
     "add `depth`"},
    {"random_depth_too_deep", "[random]\ncount = 2\ndepth = { int_uniform = [1, 20] }\nwidth = 8\n", 3, "random.depth",
     "from 1 to 16, found 20"},
    // memory plans
    {"unknown_memory_plan", "[[trial]]\nhidden = [4]\n[grid]\nmemory_plan = ['keep', 'share']\n", 4, "grid.memory_plan",
     "expected \"keep\", \"reuse\" or \"recompute\", found \"share\""},
    {"memory_plan_not_a_string", "[[trial]]\nmemory_plan = 1\n", 2, "trial[0].memory_plan", "expected a string"},
    {"recompute_every_negative", "[defaults]\nmemory_plan = 'recompute'\nrecompute_every = -1\n[[trial]]\n", 3,
     "defaults.recompute_every", "expected a whole number from 0 to 1000, found -1"},
    {"recompute_every_too_large", "[[trial]]\nmemory_plan = 'recompute'\nrecompute_every = 1001\n", 3,
     "trial[0].recompute_every", "from 0 to 1000, found 1001"},
    {"recompute_every_not_whole", "[[trial]]\nrecompute_every = 2.5\n", 2, "trial[0].recompute_every",
     "expected a whole number"},
    {"recompute_every_real_distribution", "[random]\ncount = 2\nrecompute_every = { uniform = [1, 4] }\n", 3,
     "random.recompute_every", "use int_uniform or choice"},
    // not text TOML can hold, or more than a sweep may be
    {"not_utf8", "[sweep]\nname = 'x'\nnote = '\xc3\x28'\n[[trial]]\n", 3, "",
     "not UTF-8 text: the character at column 9 (byte 0xC3) is not valid UTF-8"},
    {"too_many_runs", "[sweep]\nrepeats = 10000\n[random]\ncount = 1000000\n", 1, "",
     "= 10000000000 runs, more than 100000000; split it into several sweeps"},
    // a trial's GPUs
    {"gpus_for_the_cpu_trainer", "[[trial]]\ngpus_per_trial = 1\n", 2, "trial[0].gpus_per_trial",
     "memsweep's own trainer runs on the CPU; expected gpus_per_trial = 0"},
    {"gpus_past_the_most", "[[trial]]\nprogram = ['sh', 't.sh']\ngpus_per_trial = 17\n", 3, "trial[0].gpus_per_trial",
     "expected a whole number from 0 to 16, found 17"},
    {"gpu_placeholder_without_a_gpu", "[[trial]]\nprogram = ['t.sh', '--device=cuda:{gpu}']\ngpus_per_trial = 0\n", 3,
     "trial[0].gpus_per_trial", "the program names {gpu}, but gpus_per_trial = 0 gives the trial no GPU"},
    {"visible_devices_of_its_own",
     "[programs.t]\ncommand = ['t.sh']\nenv = { CUDA_VISIBLE_DEVICES = '0' }\n[defaults]\nprogram = 't'\n"
     "gpus_per_trial = 1\n[[trial]]\n",
     6, "defaults.gpus_per_trial", "the program's env sets CUDA_VISIBLE_DEVICES"},
    {"gpu_limit_for_the_cpu_trainer", "[[trial]]\ngpu_limit = '8GiB'\n", 2, "trial[0].gpu_limit",
     "memsweep's own trainer runs on the CPU; expected gpu_limit on a program's trial"},
    {"gpu_limit_not_a_size", "[[trial]]\nprogram = ['t.sh']\ngpu_limit = 'all'\n", 3, "trial[0].gpu_limit",
     "or \"device\" for the whole device; found the string \"all\""},
    {"gpu_limit_without_a_gpu", "[[trial]]\nprogram = ['t.sh']\ngpu_limit = 'device'\ngpus_per_trial = 0\n", 3,
     "trial[0].gpu_limit", "gpus_per_trial = 0 gives the trial no GPU to limit"},
    // syntax
    {"syntax_missing_value", "[sweep]\nname =\n", 2, "", "syntax error"},
    {"syntax_duplicate_key", "[sweep]\nname = 'a'\nname = 'b'\n", 3, "", "syntax error"},
};

INSTANTIATE_TEST_SUITE_P(Cases, SweepFileErrors, ::testing::ValuesIn(kCases),
                         [](const auto& test_case) { return test_case.param.name; });

TEST(SweepFileErrorsTest, MissingFileNamesThePathAndTheReason) {
  try {
    load_sweep_file("/nonexistent/sweep.toml");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr("/nonexistent/sweep.toml"));
    EXPECT_THAT(error.what(), HasSubstr("No such file or directory"));
  }
}

TEST(SweepFileErrorsTest, DirectoryIsRejected) {
  EXPECT_THROW(
      {
        try {
          load_sweep_file("/");
        } catch (const InputError& error) {
          EXPECT_THAT(error.what(), HasSubstr("is a directory"));
          throw;
        }
      },
      InputError);
}

}  // namespace
}  // namespace memsweep
