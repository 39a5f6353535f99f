// Program trials in the sweep file (docs/sweep-file.md, "Programs"): the
// program, trainer, env, workdir and params fields, [programs.NAME] tables,
// placeholders as program_invocation fills them, and trial identity.

#include "memsweep/config.hpp"
#include "memsweep/program.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memsweep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using Env = std::vector<std::pair<std::string, std::string>>;

TrialSpec only_trial(const SweepSpec& sweep) {
  EXPECT_EQ(sweep.trials.size(), 1u);
  return sweep.trials.at(0);
}

std::string trainer_of(const std::string& command) {
  return std::string(only_trial(parse_sweep("[[trial]]\nprogram = " + command + "\n", "t.toml")).trainer());
}

std::vector<std::string> argv_of(const TrialSpec& trial, const ProgramRunValues& values = {}) {
  return program_invocation(trial, values).argv;
}

// ---------------------------------------------------------------- the program field

TEST(ProgramField, AnInlineCommandIsTheTrialsProgram) {
  const TrialSpec& t = only_trial(parse_sweep(R"([[trial]]
batch_size = 64
program = ["python3", "-u", "jobs/my_train.py", "--batch={batch_size}"]
)",
                                              "p.toml"));
  ASSERT_TRUE(t.program.has_value());
  EXPECT_EQ(t.trainer(), "my_train");
  EXPECT_THAT(t.program->command, ElementsAre("python3", "-u", "jobs/my_train.py", "--batch={batch_size}"));
  EXPECT_TRUE(t.program->env.empty());
  EXPECT_EQ(t.program->workdir, "");
  EXPECT_EQ(t.program->place, "p.toml:3: trial[0].program");
  EXPECT_THAT(argv_of(t), ElementsAre("python3", "-u", "jobs/my_train.py", "--batch=64"));
}

TEST(ProgramField, MemsweepIsTheBuiltInTrainer) {
  const TrialSpec& t = only_trial(parse_sweep("[[trial]]\nprogram = \"memsweep\"\n", "p.toml"));
  EXPECT_FALSE(t.program.has_value());
  EXPECT_EQ(t.trainer(), kBuiltinTrainer);
  EXPECT_EQ(t.id, only_trial(parse_sweep("[[trial]]\n", "p.toml")).id);
  EXPECT_NO_THROW(check_program(t));
}

TEST(ProgramField, TrainerNamesAnInlineProgram) {
  EXPECT_EQ(trainer_of("[\"python3\", \"train.py\"]"), "train");
  EXPECT_EQ(trainer_of("[\"/usr/bin/python3.11\", \"-u\", \"dir/fit_model.py\"]"), "fit_model");
  EXPECT_EQ(trainer_of("[\"python\", \"a.py\"]"), "a");
  EXPECT_EQ(trainer_of("[\"python2.7\", \"old.py\"]"), "old");
  EXPECT_EQ(trainer_of("[\"Rscript\", \"fit.R\"]"), "fit");
  EXPECT_EQ(trainer_of("[\"julia\", \"sim.jl\"]"), "sim");
  EXPECT_EQ(trainer_of("[\"bash\", \"run.sh\"]"), "run");
  EXPECT_EQ(trainer_of("[\"sh\", \"go.sh\"]"), "go");
  EXPECT_EQ(trainer_of("[\"node\", \"net.js\"]"), "net");
  EXPECT_EQ(trainer_of("[\"perl\", \"p.pl\"]"), "p");
  EXPECT_EQ(trainer_of("[\"ruby\", \"r.rb\"]"), "r");
  EXPECT_EQ(trainer_of("[\"python3\"]"), "python3") << "an interpreter without a script is the program";
  EXPECT_EQ(trainer_of("[\"sh\", \"-c\", \"exec ./train\"]"), "sh") << "code, not a file";
  EXPECT_EQ(trainer_of("[\"perl\", \"-e\", \"print 1\"]"), "perl");
  EXPECT_EQ(trainer_of("[\"python3\", \"-u\", \"-m\", \"nets.train\", \"x.py\"]"), "nets.train") << "a module";
  // Not an interpreter: the program itself.
  EXPECT_EQ(trainer_of("[\"./jobs/train-net.sh\", \"x.py\"]"), "train-net");
  EXPECT_EQ(trainer_of("[\"/opt/tools/mytool\", \"--lr={learning_rate}\"]"), "mytool");
  EXPECT_EQ(trainer_of("[\"pythonic\", \"x.py\"]"), "pythonic");
  // Cut to 16 characters (the results file's column); others than A-Z a-z 0-9 _ . - become _.
  EXPECT_EQ(trainer_of("[\"python3\", \"a_very_long_training_script.py\"]"), "a_very_long_trai");
  EXPECT_EQ(trainer_of("[\"./my tool\"]"), "my_tool");
  EXPECT_EQ(trainer_of("[\"./x\"]\ntrainer = \"torch-2.1\""), "torch-2.1");
}

TEST(ProgramField, ProgramsTablesAreNamedAndMergedUnderTheTrial) {
  const SweepSpec sweep = parse_sweep(R"([programs.pytorch]
command = ["/usr/bin/python3", "torch_train.py", "--lr={learning_rate}"]
env = { OMP_NUM_THREADS = "{threads}", PYTHONHASHSEED = "0" }
workdir = "jobs"

[[trial]]
program = "pytorch"

[[trial]]
program = "pytorch"
env = { PYTHONHASHSEED = "{seed}", CUBLAS_WORKSPACE_CONFIG = ":4096:8" }
workdir = "/scratch/{trial_id}"
)",
                                      "p.toml");
  ASSERT_EQ(sweep.trials.size(), 2u);
  const TrialSpec& plain = sweep.trials[0];
  ASSERT_TRUE(plain.program.has_value());
  EXPECT_EQ(plain.trainer(), "pytorch");
  EXPECT_THAT(plain.program->command, ElementsAre("/usr/bin/python3", "torch_train.py", "--lr={learning_rate}"));
  EXPECT_EQ(plain.program->env, (Env{{"OMP_NUM_THREADS", "{threads}"}, {"PYTHONHASHSEED", "0"}}));
  EXPECT_EQ(plain.program->workdir, "jobs");
  EXPECT_EQ(plain.program->place, "p.toml:2: programs.pytorch.command");

  const TrialSpec& merged = sweep.trials[1];
  ASSERT_TRUE(merged.program.has_value());
  EXPECT_EQ(
      merged.program->env,
      (Env{{"CUBLAS_WORKSPACE_CONFIG", ":4096:8"}, {"OMP_NUM_THREADS", "{threads}"}, {"PYTHONHASHSEED", "{seed}"}}))
      << "sorted by name; the trial's key wins";
  EXPECT_EQ(merged.program->workdir, "/scratch/{trial_id}");

  ProgramRunValues values;
  values.threads = 3;
  const ProgramInvocation run = program_invocation(merged, values);
  EXPECT_EQ(run.env, (Env{{"CUBLAS_WORKSPACE_CONFIG", ":4096:8"},
                          {"OMP_NUM_THREADS", "3"},
                          {"PYTHONHASHSEED", std::to_string(merged.training_seed())}}));
  EXPECT_EQ(run.workdir, "/scratch/" + merged.id);
  EXPECT_THAT(run.argv, ElementsAre("/usr/bin/python3", "torch_train.py", "--lr=0.01"));
}

TEST(ProgramField, EnvMergesKeyByKeyAcrossLayers) {
  const TrialSpec& t = only_trial(parse_sweep(R"([defaults]
program = ["./train"]
env = { A = "1", B = "2" }
[[trial]]
env.B = "3"
)",
                                              "p.toml"));
  ASSERT_TRUE(t.program.has_value());
  EXPECT_EQ(t.program->env, (Env{{"A", "1"}, {"B", "3"}}));
}

TEST(ProgramField, BuiltInTrialsIgnoreEnvWorkdirTrainerAndParams) {
  const std::string plain_id = only_trial(parse_sweep("[[trial]]\nbatch_size = 8\n", "p.toml")).id;
  const TrialSpec& t = only_trial(parse_sweep(R"([[trial]]
batch_size = 8
env = { OMP_NUM_THREADS = "{threads}" }
workdir = "/tmp"
trainer = "mine"
params = { dropout = 0.5 }
)",
                                              "p.toml"));
  EXPECT_FALSE(t.program.has_value());
  EXPECT_TRUE(t.params.empty());
  EXPECT_EQ(t.params_json(), "{}");
  EXPECT_EQ(t.id, plain_id);
}

TEST(ProgramField, AGridSetsMemsweepAndAProgramSideBySide) {
  const SweepSpec sweep = parse_sweep(R"([programs.pytorch]
command = ["/usr/bin/python3", "torch_train.py", "--batch-size", "{batch_size}"]

[grid]
program = ["memsweep", "pytorch"]
batch_size = [32, 128]
)",
                                      "g.toml");
  ASSERT_EQ(sweep.trials.size(), 4u);
  std::vector<std::string> trainers;
  for (const TrialSpec& t : sweep.trials) trainers.emplace_back(t.trainer());
  EXPECT_THAT(trainers, ElementsAre("memsweep", "memsweep", "pytorch", "pytorch")) << "the first key varies slowest";
  EXPECT_EQ(sweep.trials[0].batch_size, 32);
  EXPECT_EQ(sweep.trials[3].batch_size, 128);
  // The built-in trials are the same trials as without the program axis.
  const SweepSpec plain = parse_sweep("[grid]\nbatch_size = [32, 128]\n", "g.toml");
  EXPECT_EQ(sweep.trials[0].id, plain.trials[0].id);
  EXPECT_EQ(sweep.trials[1].id, plain.trials[1].id);
  EXPECT_NE(sweep.trials[2].id, sweep.trials[0].id);
  EXPECT_THAT(argv_of(sweep.trials[3]), ElementsAre("/usr/bin/python3", "torch_train.py", "--batch-size", "128"));
}

TEST(ProgramField, AGridMayCombineCommandsAndARandomSearchMayChooseThem) {
  const SweepSpec grid = parse_sweep("[grid]\nprogram = [[\"./a\"], [\"./b\", \"x\"], \"memsweep\"]\n", "g.toml");
  ASSERT_EQ(grid.trials.size(), 3u);
  EXPECT_EQ(grid.trials[0].trainer(), "a");
  EXPECT_EQ(grid.trials[1].trainer(), "b");
  EXPECT_EQ(grid.trials[2].trainer(), "memsweep");
  const SweepSpec random =
      parse_sweep("[random]\ncount = 20\nprogram = { choice = [[\"./a\"], \"memsweep\"] }\n", "r.toml");
  std::set<std::string> trainers;
  for (const TrialSpec& t : random.trials) trainers.emplace(t.trainer());
  EXPECT_EQ(trainers, (std::set<std::string>{"a", "memsweep"}));
}

// ---------------------------------------------------------------- placeholders

// Every field below has a value no other placeholder's can have, so that a
// name filled from the wrong field shows; two repeats, so that the second's
// {seed} is a derived seed and its {repeat} not the default.
constexpr const char* kDistinctFields = R"([sweep]
seed = 5
repeats = 2
[[trial]]
dataset = "synthetic"
synthetic = { shape = [3, 16, 12], classes = 4, train_size = 100, test_size = 20, noise = 0.25 }
model = "cnn"
channels = [16, 32]
hidden = [128, 64]
optimizer = "adam"
learning_rate = 0.001
beta1 = 0.8
beta2 = 0.99
epsilon = 1e-7
momentum = 0.5
epochs = 2
batch_size = 64
memory_plan = "recompute"
recompute_every = 9
)";

TEST(Placeholders, FillWholeElementsAndPartsOfThem) {
  const SweepSpec sweep = parse_sweep(std::string(kDistinctFields) + R"(
program = ["./train", "--dataset={dataset}", "{model}", "--channels", "{channels}", "--hidden={hidden}",
           "{optimizer}:{learning_rate}:{momentum}:{beta1}:{beta2}:{epsilon}", "{epochs}x{batch_size}",
           "--seed={seed}", "--shape={synthetic.shape}",
           "{synthetic.classes}/{synthetic.train_size}/{synthetic.test_size}/{synthetic.noise}",
           "{trial_id}", "r{repeat}", "{data_dir}", "{threads}", "{max_train_examples}", "{max_test_examples}",
           "a{attempt}"]
)",
                                      "p.toml");
  const TrialSpec& t = sweep.trials.at(0);
  ProgramRunValues values{"/data/synthetic", 4, 1000, 200, 2, "", "0"};
  EXPECT_THAT(argv_of(t, values),
              ElementsAre("./train", "--dataset=synthetic", "cnn", "--channels", "16,32", "--hidden=128,64",
                          "adam:0.001:0.5:0.8:0.99:1e-07", "2x64", "--seed=5", "--shape=3,16,12", "4/100/20/0.25", t.id,
                          "r0", "/data/synthetic", "4", "1000", "200", "a2"));
}

TEST(Placeholders, DoubledBracesAreLiteral) {
  const TrialSpec& t = only_trial(parse_sweep(
      "[[trial]]\nprogram = [\"./t\", \"{{x}}\", \"{{{epochs}}}\", \"}}{{\", \"-c={{'a': {epochs}}}\"]\n", "p.toml"));
  EXPECT_THAT(argv_of(t), ElementsAre("./t", "{x}", "{1}", "}{", "-c={'a': 1}"));
}

TEST(Placeholders, ParamsAreFilledAsTextAndListsCommaSeparated) {
  const TrialSpec& t = only_trial(parse_sweep(R"([[trial]]
program = ["./t", "{dropout}", "{layers}", "{name}", "{flag}", "{big}", "{ratio}", "{names}", "{empty}"]
params = { dropout = 0.1, layers = [16, 32], name = "res{net}", flag = true, big = 12345678901, ratio = 1.0, names = ["a", "b"], empty = [] }
)",
                                              "p.toml"));
  EXPECT_THAT(argv_of(t), ElementsAre("./t", "0.1", "16,32", "res{net}", "true", "12345678901", "1", "a,b", ""));
}

TEST(Placeholders, SeedIsTheRepeatsTrainingSeed) {
  const SweepSpec sweep = parse_sweep(
      "[sweep]\nseed = 9\nrepeats = 2\n[[trial]]\nprogram = [\"./t\", \"{seed}\", "
      "\"{repeat}\"]\n",
      "p.toml");
  ASSERT_EQ(sweep.trials.size(), 2u);
  EXPECT_THAT(argv_of(sweep.trials[0]), ElementsAre("./t", "9", "0"));
  EXPECT_THAT(argv_of(sweep.trials[1]), ElementsAre("./t", std::to_string(sweep.trials[1].training_seed()), "1"));
  EXPECT_NE(sweep.trials[1].training_seed(), 9u);
}

std::string comma_separated(const std::vector<int>& values) { return fmt::format("{}", fmt::join(values, ",")); }

// What {name} stands for, read from the trial and the run, not from
// program_invocation: nullopt for a name this test does not know, which
// fails it until the new name's value is checked here too.
std::optional<std::string> value_of(const TrialSpec& t, const ProgramRunValues& run, std::string_view name) {
  const SyntheticSpec& s = t.dataset.synthetic;
  // Numbers as docs/sweep-file.md writes them: the shortest text that reads back.
  const auto number = [](double value) { return fmt::format("{}", value); };
  const std::map<std::string_view, std::string> values{
      {"dataset", std::string(dataset_name(t.dataset.kind))},
      {"model", std::string(model_name(t.model))},
      {"channels", comma_separated(t.channels)},
      {"optimizer", std::string(optimizer_name(t.optimizer.kind))},
      {"momentum", number(t.optimizer.momentum)},
      {"beta1", number(t.optimizer.beta1)},
      {"beta2", number(t.optimizer.beta2)},
      {"epsilon", number(t.optimizer.epsilon)},
      {"learning_rate", number(t.learning_rate)},
      {"epochs", std::to_string(t.epochs)},
      {"batch_size", std::to_string(t.batch_size)},
      {"hidden", comma_separated(t.hidden)},
      {"memory_plan", std::string(memory_plan_name(t.memory_plan))},
      {"recompute_every", std::to_string(t.recompute_every)},
      {"seed", std::to_string(t.training_seed())},
      {"synthetic.shape", comma_separated({s.shape.channels, s.shape.height, s.shape.width})},
      {"synthetic.classes", std::to_string(s.classes)},
      {"synthetic.train_size", std::to_string(s.train_size)},
      {"synthetic.test_size", std::to_string(s.test_size)},
      {"synthetic.noise", number(s.noise)},
      {"trial_id", t.id},
      {"repeat", std::to_string(t.repeat)},
      {"attempt", std::to_string(run.attempt)},
      {"data_dir", run.data_dir},
      {"trial_dir", run.trial_dir},
      {"gpu", run.gpu},
      {"threads", std::to_string(run.threads)},
      {"max_train_examples", std::to_string(run.max_train_examples)},
      {"max_test_examples", std::to_string(run.max_test_examples)},
  };
  const auto found = values.find(name);
  if (found == values.end()) return std::nullopt;
  return found->second;
}

// The list is what the parser accepts and what program_invocation must
// fill: a name it holds but fills from the wrong field, or not at all, fails
// here, whatever the list's length.
TEST(Placeholders, EveryBuiltinNameIsAcceptedAndFilledWithItsOwnValue) {
  const std::vector<std::string> names = builtin_placeholder_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  std::string command = "program = [\"./train\"";
  for (const std::string& name : names) command += ", \"{" + name + "}\"";
  command += "]\n";
  const SweepSpec sweep = parse_sweep(std::string(kDistinctFields) + command, "p.toml");
  ASSERT_EQ(sweep.trials.size(), 2u);
  const TrialSpec& t = sweep.trials[1];
  const ProgramRunValues run{"/data/synthetic", 6, 1000, 200, 7, "/out/r.logs/t-7", "0,1"};

  const std::vector<std::string> argv = argv_of(t, run);
  ASSERT_EQ(argv.size(), names.size() + 1);
  std::set<std::string> seen;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::optional<std::string> expected = value_of(t, run, names[i]);
    ASSERT_TRUE(expected.has_value()) << "{" << names[i] << "}: a name this test has no value for";
    EXPECT_EQ(argv[i + 1], *expected) << "{" << names[i] << "}";
    EXPECT_TRUE(seen.insert(*expected).second)
        << "{" << names[i] << "}'s value " << *expected << " is another placeholder's too: a swap could pass unseen";
  }
}

// docs/sweep-file.md's table of placeholders: the `{name}`s of its first
// column (but `{NAME}`, a trial's params), from the header row to the end
// of the table.
std::set<std::string> documented_placeholders() {
  std::ifstream doc(std::string(MEMSWEEP_SOURCE_DIR) + "/docs/sweep-file.md");
  std::set<std::string> names;
  bool in_table = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.starts_with("| placeholder |")) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (!line.starts_with("|")) break;
    const std::string first_cell = line.substr(0, line.find('|', 1));
    static const std::regex kPlaceholder(R"(`\{([a-z0-9_.]+)\}`)");
    for (std::sregex_iterator it(first_cell.begin(), first_cell.end(), kPlaceholder), end; it != end; ++it)
      names.insert((*it)[1].str());
  }
  return names;
}

// A name the code knows but the page does not tell the user of, or one the
// page promises but a sweep file is refused.
TEST(Placeholders, TheSweepFilePageDocumentsExactlyTheBuiltinNames) {
  const std::vector<std::string> names = builtin_placeholder_names();
  const std::set<std::string> documented = documented_placeholders();
  ASSERT_FALSE(documented.empty()) << "no placeholder table found in docs/sweep-file.md";
  EXPECT_EQ(documented, std::set<std::string>(names.begin(), names.end()));
}

// ---------------------------------------------------------------- params

TEST(Params, LayersMergeKeyByKey) {
  const SweepSpec sweep = parse_sweep(R"([defaults]
program = ["./t"]
[defaults.params]
dropout = 0.1
width = 3
[[trial]]
params.dropout = 0.5
[[trial]]
params = { extra = "x" }
)",
                                      "p.toml");
  ASSERT_EQ(sweep.trials.size(), 2u);
  EXPECT_EQ(sweep.trials[0].params_json(), R"({"dropout":0.5,"width":3})");
  EXPECT_EQ(sweep.trials[1].params_json(), R"({"dropout":0.1,"extra":"x","width":3})");
  ASSERT_EQ(sweep.trials[1].params.size(), 3u);
  EXPECT_EQ(sweep.trials[1].params[0].first, "dropout") << "sorted by name";
  EXPECT_EQ(sweep.trials[1].params[2].first, "width");
}

TEST(Params, JsonOfEveryKindOfValue) {
  const TrialSpec& t = only_trial(parse_sweep(R"([[trial]]
program = ["./t"]
params = { s = "a \"q\" \\ é\t", i = -3, f = 2.5e-5, b = false, l = [1, 2.5, "x", true], e = [] }
)",
                                              "p.toml"));
  EXPECT_EQ(t.params_json(), R"({"b":false,"e":[],"f":2.5e-05,"i":-3,"l":[1,2.5,"x",true],"s":"a \"q\" \\ é\t"})");
  EXPECT_THAT(t.summary_text(), HasSubstr("t b=false e= f=2.5e-05 i=-3 l=1,2.5,x,true s="));
  EXPECT_THAT(t.summary_text(), Not(HasSubstr("mlp"))) << "no built-in field is set or named";
}

TEST(Params, EachGridKeyIsAnAxis) {
  const SweepSpec sweep = parse_sweep(R"([defaults]
program = ["./t", "{dropout}", "{act}"]
[grid]
params.dropout = [0.1, 0.3]
batch_size = [8, 16]
params.act = ["relu", "gelu"]
)",
                                      "g.toml");
  ASSERT_EQ(sweep.trials.size(), 8u);
  // File order: dropout (line 4) slowest, then batch_size, then act.
  EXPECT_EQ(sweep.trials[0].params_json(), R"({"act":"relu","dropout":0.1})");
  EXPECT_EQ(sweep.trials[1].params_json(), R"({"act":"gelu","dropout":0.1})");
  EXPECT_EQ(sweep.trials[2].batch_size, 16);
  EXPECT_EQ(sweep.trials[7].params_json(), R"({"act":"gelu","dropout":0.3})");
  std::set<std::string> ids;
  for (const TrialSpec& t : sweep.trials) ids.insert(t.id);
  EXPECT_EQ(ids.size(), 8u);
}

TEST(Params, RandomDrawsEachKeyFromItsOwnStream) {
  const std::string head = "[sweep]\nseed = 4\n[defaults]\nprogram = [\"./t\"]\n[random]\ncount = 30\n";
  const SweepSpec sweep = parse_sweep(head + R"(params.dropout = { uniform = [0.1, 0.5] }
params.decay = { log_uniform = [1e-5, 1e-2] }
params.layers = { int_uniform = [1, 4] }
params.act = { choice = ["relu", "gelu"] }
params.fixed = [1, 2]
)",
                                      "r.toml");
  ASSERT_EQ(sweep.trials.size(), 30u);
  std::set<std::string> acts;
  for (const TrialSpec& t : sweep.trials) {
    ASSERT_EQ(t.params.size(), 5u);
    const auto value = [&](const std::string& name) {
      for (const auto& [key, v] : t.params)
        if (key == name) return v;
      return ParamValue{};
    };
    const double dropout = std::stod(value("dropout").text);
    EXPECT_GE(dropout, 0.1);
    EXPECT_LT(dropout, 0.5);
    const double decay = std::stod(value("decay").text);
    EXPECT_GE(decay, 1e-5);
    EXPECT_LT(decay, 1e-2);
    const int layers = std::stoi(value("layers").text);
    EXPECT_GE(layers, 1);
    EXPECT_LE(layers, 4);
    EXPECT_THAT(value("layers").text, ::testing::MatchesRegex("[0-9]+")) << "whole numbers stay whole";
    acts.insert(value("act").text);
    EXPECT_EQ(value("fixed").json, "[1,2]");
  }
  EXPECT_EQ(acts.size(), 2u);
  // Adding a key keeps the others' draws.
  const SweepSpec more = parse_sweep(head + R"(params.dropout = { uniform = [0.1, 0.5] }
params.decay = { log_uniform = [1e-5, 1e-2] }
params.layers = { int_uniform = [1, 4] }
params.act = { choice = ["relu", "gelu"] }
params.fixed = [1, 2]
params.new = { uniform = [0, 1] }
)",
                                     "r.toml");
  for (std::size_t i = 0; i < sweep.trials.size(); ++i)
    for (std::size_t k = 0; k < sweep.trials[i].params.size(); ++k)
      EXPECT_EQ(more.trials[i].params[k].second.json, sweep.trials[i].params[k].second.json)
          << sweep.trials[i].params[k].first;
}

// ---------------------------------------------------------------- identity

// Ids of built-in trials, computed before programs existed: results files
// and resumed sweeps depend on them staying the same.
TEST(ProgramIdentity, BuiltInIdsAreUnchanged) {
  EXPECT_EQ(only_trial(parse_sweep("[[trial]]\n", "a.toml")).id, "06c07f17d3e2");
  const SweepSpec quickstart = load_sweep_file(std::string(MEMSWEEP_SOURCE_DIR) + "/jobs/examples/quickstart.toml");
  ASSERT_EQ(quickstart.trials.size(), 4u);
  EXPECT_EQ(quickstart.trials[0].id, "af1f0f42f56c");
  EXPECT_EQ(quickstart.trials[3].id, "9a7ace2aff0a");
  const SweepSpec mixed = parse_sweep(R"([sweep]
seed = 3
repeats = 2
[[trial]]
dataset = "synthetic"
synthetic = { shape = [3, 16, 16], classes = 4 }
model = "cnn"
channels = [8, 16]
hidden = [32]
optimizer = "adam"
learning_rate = 0.001
[[trial]]
optimizer = "momentum"
momentum = 0.5
batch_size = 64
)",
                                      "b.toml");
  ASSERT_EQ(mixed.trials.size(), 4u);
  EXPECT_EQ(mixed.trials[0].id, "82ddeaede591");
  EXPECT_EQ(mixed.trials[1].id, "8c88efd8c99a");
  EXPECT_EQ(mixed.trials[2].id, "82dde9ede591");
  EXPECT_EQ(mixed.trials[3].id, "8c88eed8c99a");
  EXPECT_THAT(mixed.trials[0].canonical_text(), Not(HasSubstr("program")));
}

std::string id_of(const std::string& trial_text, const std::string& head = "") {
  return only_trial(parse_sweep(head + "[[trial]]\n" + trial_text + "\n", "i.toml")).id;
}

TEST(ProgramIdentity, EverythingTheProgramIsGivenIsPartOfTheId) {
  const std::string base = "program = [\"./t\", \"--lr={learning_rate}\"]\nparams = { d = 0.1 }\n";
  const std::string base_id = id_of(base);
  EXPECT_NE(base_id, id_of("")) << "a program trial is not the built-in trial";
  EXPECT_EQ(base_id, id_of(base)) << "stable";
  for (const std::string other : {
           "program = [\"./t\", \"--lr={learning_rate}\"]\nparams = { d = 0.2 }\n",
           "program = [\"./t\", \"--lr={learning_rate}\"]\nparams = { d = 0.1, e = 1 }\n",
           "program = [\"./t\", \"--lr={learning_rate}\"]\n",
           "program = [\"./u\", \"--lr={learning_rate}\"]\nparams = { d = 0.1 }\ntrainer = \"t\"\n",
           "program = [\"./t\", \"--lr={learning_rate}\"]\nparams = { d = 0.1 }\ntrainer = \"t2\"\n",
           "program = [\"./t\", \"--lr={learning_rate}\"]\nparams = { d = 0.1 }\nenv = { A = \"1\" }\n",
           "program = [\"./t\", \"--lr={learning_rate}\"]\nparams = { d = 0.1 }\nworkdir = \"w\"\n",
           "program = [\"./t\", \"--lr={learning_rate}\"]\nparams = { d = 0.1 }\nlearning_rate = 0.5\n",
       })
    EXPECT_NE(id_of(other), base_id) << other;
}

TEST(ProgramIdentity, TheCommandAsFilledCountsNotHowItIsWritten) {
  // The same command line, spelled two ways.
  EXPECT_EQ(id_of("program = [\"./t\", \"--lr={learning_rate}\"]"), id_of("program = [\"./t\", \"--lr=0.01\"]"));
  EXPECT_EQ(id_of("program = [\"./t\"]\nenv = { A = \"{epochs}\" }"),
            id_of("program = [\"./t\"]\nenv = { A = \"1\" }"));
  // An optimizer's unused parameter is part of a program trial when its command names it.
  EXPECT_NE(id_of("optimizer = 'sgd'\nmomentum = 0.3\nprogram = [\"./t\", \"{momentum}\"]"),
            id_of("optimizer = 'sgd'\nmomentum = 0.4\nprogram = [\"./t\", \"{momentum}\"]"));
  EXPECT_EQ(id_of("optimizer = 'sgd'\nmomentum = 0.3\nprogram = [\"./t\"]"),
            id_of("optimizer = 'sgd'\nmomentum = 0.4\nprogram = [\"./t\"]"));
  // The run's values are not the trial's.
  EXPECT_NE(id_of("program = [\"./t\", \"{threads}\"]"), id_of("program = [\"./t\", \"1\"]"));
}

// A trial's repeats differ in their repeat and seed fields only, not in
// their command too: readers group repeats by the text without those two.
TEST(ProgramIdentity, RepeatsKeepOneCommandInTheirDefinition) {
  const SweepSpec sweep = parse_sweep(
      "[sweep]\nseed = 9\nrepeats = 2\n[[trial]]\nprogram = [\"./t\", \"--seed={seed}\", \"{repeat}\"]\n", "p.toml");
  ASSERT_EQ(sweep.trials.size(), 2u);
  const auto command_of = [](const TrialSpec& trial) {
    const std::string text = trial.canonical_text();
    return text.substr(text.find(";command="));
  };
  EXPECT_EQ(command_of(sweep.trials[0]), command_of(sweep.trials[1]));
  EXPECT_THAT(command_of(sweep.trials[0]), HasSubstr("--seed={seed}"));
  EXPECT_NE(sweep.trials[0].id, sweep.trials[1].id);
}

TEST(ProgramIdentity, AProgramsTableAndTheSameInlineCommandAreOneTrial) {
  const std::string table = "[programs.t]\ncommand = [\"./t\", \"{epochs}\"]\n";
  EXPECT_EQ(id_of("program = \"t\"", table), id_of("program = [\"./t\", \"{epochs}\"]"));
}

TEST(ProgramIdentity, CanonicalAndSummaryTexts) {
  const TrialSpec& t = only_trial(parse_sweep(R"([programs.pytorch]
command = ["python3", "x.py", "--lr={learning_rate}", "{{a}}"]
env = { B = "{threads}", A = "q\"" }
workdir = "w/{trial_id}"
[[trial]]
program = "pytorch"
params = { dropout = 0.1, act = "relu" }
)",
                                              "c.toml"));
  const std::string builtin = only_trial(parse_sweep("[[trial]]\n", "c.toml")).canonical_text();
  EXPECT_EQ(t.canonical_text(), builtin + R"(;program=pytorch;command=["python3","x.py","--lr=0.01","{{a}}"])" +
                                    R"(;env={"A":"q\"","B":"{threads}"};workdir="w/{trial_id}")" +
                                    R"(;params={"act":"relu","dropout":0.1})");
  EXPECT_EQ(t.summary_text(), "pytorch lr=0.01 act=relu dropout=0.1")
      << "the fields its command names, none of the built-in trainer's others";
}

// A program shows the built-in fields its file sets for it ([defaults],
// its own table, a grid axis) or its texts name; no others.
TEST(ProgramFields, ThoseTheFileSetsOrTheCommandNames) {
  const SweepSpec sweep = parse_sweep(R"([defaults]
dataset = "mnist"
optimizer = "adam"
[grid]
program = [["./t", "--lr={learning_rate}", "--shape={synthetic.shape}"], "memsweep"]
batch_size = [8]
)",
                                      "f.toml");
  ASSERT_EQ(sweep.trials.size(), 2u);
  const TrialSpec program = sweep.trials[0].program ? sweep.trials[0] : sweep.trials[1];
  const TrialSpec builtin = sweep.trials[0].program ? sweep.trials[1] : sweep.trials[0];
  ASSERT_TRUE(program.program);
  EXPECT_THAT(program.program->fields, ElementsAre("batch_size", "dataset", "learning_rate", "optimizer"));
  EXPECT_FALSE(program.shows_field("model"));
  EXPECT_FALSE(program.shows_field("hidden"));
  EXPECT_FALSE(program.shows_field("epochs"));
  EXPECT_TRUE(program.shows_field("dataset"));
  EXPECT_FALSE(program.program->uses_data_dir);
  for (const char* field : {"model", "hidden", "epochs", "channels"}) EXPECT_TRUE(builtin.shows_field(field));
  EXPECT_EQ(program.summary_text(), "t mnist adam lr=0.01 batch=8");
}

TEST(ProgramFields, DataDirMakesTheDatasetMoreThanALabel) {
  const auto uses = [](const std::string& where) {
    return only_trial(parse_sweep("[[trial]]\ndataset = \"mnist\"\n" + where, "d.toml")).program->uses_data_dir;
  };
  EXPECT_FALSE(uses("program = [\"./t\", \"{dataset}\"]\n"));
  EXPECT_TRUE(uses("program = [\"./t\", \"--data={data_dir}/x\"]\n"));
  EXPECT_TRUE(uses("program = [\"./t\"]\nenv = { D = \"{data_dir}\" }\n"));
  EXPECT_TRUE(uses("program = [\"./t\"]\nworkdir = \"{data_dir}\"\n"));
  EXPECT_FALSE(uses("program = [\"./t\", \"{{data_dir}}\"]\n")) << "literal braces are no placeholder";
}

// Issue 43: {trial_dir} (item 12) and the log limit (item 6), set in a
// [programs.NAME] table; a command has their defaults. Neither is part of
// the trial's id: they say what becomes of its files, not what it trains.
TEST(ProgramFields, TrialDirAndLogLimitFromTheProgramsTable) {
  const auto program_of = [](const std::string& table) {
    return *only_trial(parse_sweep("[programs.x]\ncommand = ['./t', '--save={trial_dir}/m.pt']\n" + table +
                                       "[[trial]]\nprogram = 'x'\n",
                                   "k.toml"))
                .program;
  };
  const ProgramSpec defaults = program_of("");
  EXPECT_TRUE(defaults.uses_trial_dir);
  EXPECT_EQ(defaults.keep_trial_dir, KeepTrialDir::failed);
  EXPECT_EQ(defaults.log_limit_bytes, 64U << 20);
  EXPECT_EQ(program_of("keep_trial_dir = true\n").keep_trial_dir, KeepTrialDir::always);
  EXPECT_EQ(program_of("keep_trial_dir = false\n").keep_trial_dir, KeepTrialDir::never);
  EXPECT_EQ(program_of("keep_trial_dir = 'failed'\n").keep_trial_dir, KeepTrialDir::failed);
  EXPECT_EQ(program_of("log_limit = '1MiB'\n").log_limit_bytes, 1U << 20);
  EXPECT_EQ(program_of("log_limit = 4096\n").log_limit_bytes, 4096U);
  EXPECT_EQ(program_of("log_limit = 0\n").log_limit_bytes, 0U) << "no limit";

  const auto id_of = [](const std::string& table) {
    return only_trial(parse_sweep("[programs.x]\ncommand = ['./t']\n" + table + "[[trial]]\nprogram = 'x'\n", "k.toml"))
        .id;
  };
  EXPECT_EQ(id_of(""), id_of("keep_trial_dir = true\nlog_limit = '1MiB'\n"));

  const auto uses = [](const std::string& where) {
    return only_trial(parse_sweep("[[trial]]\n" + where, "d.toml")).program->uses_trial_dir;
  };
  EXPECT_FALSE(uses("program = [\"./t\"]\n"));
  EXPECT_TRUE(uses("program = [\"/bin/t\"]\nworkdir = \"{trial_dir}\"\n"));
  EXPECT_TRUE(uses("program = [\"./t\"]\nenv = { OUT = \"{trial_dir}/x\" }\n"));
  EXPECT_FALSE(uses("program = [\"./t\", \"{{trial_dir}}\"]\n")) << "literal braces are no placeholder";
}

TEST(Placeholders, TrialDirIsFilledFromTheRunInEveryText) {
  const TrialSpec t =
      only_trial(parse_sweep("[[trial]]\nprogram = ['./t', '--save={trial_dir}/model.pt']\nworkdir = '{trial_dir}'\n"
                             "env = { OUT = '{trial_dir}' }\n",
                             "p.toml"));
  ProgramRunValues run;
  run.trial_dir = "/r/res.logs/abc-1";
  const ProgramInvocation invocation = program_invocation(t, run);
  EXPECT_THAT(invocation.argv, ElementsAre("./t", "--save=/r/res.logs/abc-1/model.pt"));
  EXPECT_EQ(invocation.workdir, "/r/res.logs/abc-1");
  EXPECT_THAT(invocation.env, ElementsAre(std::pair<std::string, std::string>("OUT", "/r/res.logs/abc-1")));
}

}  // namespace
}  // namespace memsweep
