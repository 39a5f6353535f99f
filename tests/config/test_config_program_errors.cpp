// Bad program trials are rejected with the file, the line and the key
// (placeholders, programs, trainers, params), and check_program finds a
// program that cannot be started.

#include "memsweep/config.hpp"
#include "memsweep/program.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace memsweep {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct BadProgram {
  std::string name;
  std::string text;
  int line;
  std::string key;
  std::string expected;  // part of the message
};

void PrintTo(const BadProgram& c, std::ostream* os) { *os << c.name; }

class ProgramFileErrors : public ::testing::TestWithParam<BadProgram> {};

TEST_P(ProgramFileErrors, NamesFileLineKeyAndExpectation) {
  const BadProgram& c = GetParam();
  try {
    parse_sweep(c.text, "bad.toml");
    FAIL() << "expected a ConfigError for:\n" << c.text;
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.file(), "bad.toml");
    EXPECT_EQ(error.line(), c.line) << error.what();
    EXPECT_EQ(error.key(), c.key) << error.what();
    EXPECT_THAT(error.what(), StartsWith("bad.toml:" + std::to_string(c.line) + ": " + c.key + ": "));
    EXPECT_THAT(error.what(), HasSubstr(c.expected));
  }
}

const BadProgram kCases[] = {
    // placeholders
    {"unknown_placeholder", "[[trial]]\nprogram = ['./t', '--p={drpout}']\nparams = { dropout = 0.1 }\n", 2,
     "trial[0].program[1]",
     "unknown placeholder {drpout}; expected one of: attempt, batch_size, beta1, beta2, channels, data_dir, dataset, "
     "epochs, epsilon, gpu, hidden, learning_rate, max_test_examples, max_train_examples, memory_plan, model, "
     "momentum, "
     "optimizer, recompute_every, repeat, seed, synthetic.classes, synthetic.noise, synthetic.shape, "
     "synthetic.test_size, synthetic.train_size, "
     "threads, trial_dir, trial_id; or a name in the trial's [params] (dropout)"},
    {"unknown_placeholder_no_params", "[[trial]]\nprogram = ['./t', '{lr}']\n", 2, "trial[0].program[1]",
     "unknown placeholder {lr}; expected one of: attempt,"},
    {"unknown_placeholder_in_env", "[[trial]]\nprogram = ['./t']\nenv = { OMP_NUM_THREADS = '{thread}' }\n", 3,
     "trial[0].env.OMP_NUM_THREADS", "unknown placeholder {thread}"},
    {"unknown_placeholder_in_workdir", "[defaults]\nworkdir = 'runs/{trial}'\n[[trial]]\nprogram = ['./t']\n", 2,
     "defaults.workdir", "unknown placeholder {trial}"},
    {"unknown_placeholder_in_table", "[programs.x]\ncommand = ['./t',\n  '{epoch}']\n[[trial]]\nprogram = 'x'\n", 2,
     "programs.x.command[1]", "unknown placeholder {epoch}"},
    {"unknown_placeholder_in_table_env",
     "[programs.x]\ncommand = ['./t']\nenv = { A = '{b}' }\n[[trial]]\nprogram = "
     "'x'\n",
     3, "programs.x.env.A", "unknown placeholder {b}"},
    {"param_of_another_trial",
     "[[trial]]\nprogram = ['./t', '{d}']\nparams = { d = 1 }\n[[trial]]\nprogram = ['./t', '{d}']\n", 5,
     "trial[1].program[1]", "unknown placeholder {d}"},
    {"unclosed_brace", "[[trial]]\nprogram = ['./t', '--lr={learning_rate']\n", 2, "trial[0].program[1]",
     "a { without its } (write {{ for a literal brace)"},
    {"lone_closing_brace", "[[trial]]\nprogram = ['./t', 'a}b']\n", 2, "trial[0].program[1]",
     "a lone } (write }} for a literal brace)"},
    {"empty_placeholder", "[[trial]]\nprogram = ['./t', '{}']\n", 2, "trial[0].program[1]", "an empty placeholder"},
    {"bad_brace_in_env", "[defaults]\nenv = { A = '{' }\n[[trial]]\n", 2, "defaults.env.A", "a { without its }"},
    // the program
    {"empty_program_array", "[[trial]]\nprogram = []\n", 2, "trial[0].program",
     "expected a command (an array of strings, e.g. [\"python3\", \"train.py\", \"--lr={learning_rate}\"]), the name "
     "of a [programs] table, or \"memsweep\" (the built-in trainer), found an empty array"},
    {"empty_program_string", "[[trial]]\nprogram = ''\n", 2, "trial[0].program", "found an empty string"},
    {"program_number", "[[trial]]\nprogram = 3\n", 2, "trial[0].program", "found the integer 3"},
    {"program_element_number", "[[trial]]\nprogram = ['./t', 3]\n", 2, "trial[0].program[1]", "expected a string"},
    {"program_first_empty", "[[trial]]\nprogram = ['', 'x']\n", 2, "trial[0].program[0]",
     "expected the program to run, found an empty string"},
    {"unknown_program_name", "[programs.pytorch]\ncommand = ['python3']\n[[trial]]\nprogram = 'pytroch'\n", 4,
     "trial[0].program",
     "unknown program \"pytroch\"; expected a command (an array of strings) or one of: memsweep, pytorch"},
    {"unknown_program_no_tables", "[[trial]]\nprogram = 'torch'\n", 2, "trial[0].program",
     "(the file has no [programs.NAME] tables)"},
    {"command_as_grid_values", "[grid]\nprogram = ['python3', 'train.py']\n", 2, "grid.program",
     "in [grid], `program` lists the programs to combine"},
    {"derived_name_is_memsweep", "[[trial]]\nprogram = ['./memsweep', 'run']\n", 2, "trial[0].program",
     "set `trainer` to name it otherwise"},
    // [programs.NAME]
    {"program_table_name_chars", "[programs.'py torch']\ncommand = ['x']\n[[trial]]\n", 1, "programs.py torch",
     "expected a name of 1 to 16 characters from A-Z a-z 0-9 _ . -"},
    {"program_table_name_long", "[programs.abcdefghijklmnopq]\ncommand = ['x']\n[[trial]]\n", 1,
     "programs.abcdefghijklmnopq", "found \"abcdefghijklmnopq\""},
    {"program_table_memsweep", "[programs.memsweep]\ncommand = ['x']\n[[trial]]\n", 1, "programs.memsweep",
     "\"memsweep\" is the built-in trainer's name"},
    {"program_table_without_command", "[programs.x]\nenv = { A = '1' }\n[[trial]]\n", 1, "programs.x",
     "missing key `command`"},
    {"program_table_unknown_key", "[programs.x]\ncommand = ['x']\ncwd = '/'\n[[trial]]\n", 3, "programs.x.cwd",
     "unknown key; expected one of: command, env, workdir"},
    {"program_table_command_string", "[programs.x]\ncommand = 'python3 train.py'\n[[trial]]\n", 2, "programs.x.command",
     "expected an array, found the string"},
    {"program_table_command_empty", "[programs.x]\ncommand = []\n[[trial]]\n", 2, "programs.x.command",
     "found an empty array"},
    {"program_table_env_not_string", "[programs.x]\ncommand = ['x']\nenv = { A = 1 }\n[[trial]]\n", 3,
     "programs.x.env.A", "expected a string, found the integer 1"},
    {"programs_not_table", "programs = 3\n[[trial]]\n", 1, "programs", "expected a table"},
    {"keep_trial_dir_word", "[programs.x]\ncommand = ['x']\nkeep_trial_dir = 'yes'\n[[trial]]\n", 3,
     "programs.x.keep_trial_dir",
     "expected true (keep every attempt's {trial_dir}), false (remove it once the attempt "
     "ends) or \"failed\""},
    {"keep_trial_dir_number", "[programs.x]\ncommand = ['x']\nkeep_trial_dir = 1\n[[trial]]\n", 3,
     "programs.x.keep_trial_dir", "found the integer 1"},
    {"log_limit_not_a_size", "[programs.x]\ncommand = ['x']\nlog_limit = '64 MB of it'\n[[trial]]\n", 3,
     "programs.x.log_limit", "expected a size such as \"2GiB\""},
    {"log_limit_too_small", "[programs.x]\ncommand = ['x']\nlog_limit = 100\n[[trial]]\n", 3, "programs.x.log_limit",
     "from 1KiB to 1 EiB (2^60 bytes) (what each of the program's stdout and stderr logs keeps per attempt: its first "
     "and last halves), or 0 for no limit, found the integer 100"},
    {"log_limit_negative", "[programs.x]\ncommand = ['x']\nlog_limit = -1\n[[trial]]\n", 3, "programs.x.log_limit",
     "or 0 for no limit"},
    // trainer
    {"trainer_too_long", "[[trial]]\nprogram = ['./t']\ntrainer = 'a-very-long-trainer'\n", 3, "trial[0].trainer",
     "expected a name of 1 to 16 characters"},
    {"trainer_bad_chars", "[[trial]]\nprogram = ['./t']\ntrainer = 'a/b'\n", 3, "trial[0].trainer",
     "from A-Z a-z 0-9 _ . -"},
    {"trainer_memsweep", "[[trial]]\nprogram = ['./t']\ntrainer = 'memsweep'\n", 3, "trial[0].trainer",
     "the built-in trainer's name"},
    {"trainer_for_table", "[programs.x]\ncommand = ['x']\n[[trial]]\nprogram = 'x'\ntrainer = 'y'\n", 5,
     "trial[0].trainer", "`trainer` names programs given as commands"},
    // env and workdir
    {"env_bad_name", "[[trial]]\nenv = { '1A' = 'x' }\n", 2, "trial[0].env.1A",
     "expected an environment variable's name"},
    {"env_not_table", "[[trial]]\nenv = 'A=1'\n", 2, "trial[0].env",
     "expected a table of environment variables, one key each (e.g. env.OMP_NUM_THREADS = \"1\")"},
    {"env_value_number", "[[trial]]\nenv = { A = 1 }\n", 2, "trial[0].env.A", "expected a string"},
    {"workdir_number", "[[trial]]\nworkdir = 1\n", 2, "trial[0].workdir", "expected a string"},
    // params
    {"param_name_digit", "[[trial]]\nparams = { 1x = 0.1 }\n", 2, "trial[0].params.1x", "expected a parameter name"},
    {"param_name_dash", "[[trial]]\nparams = { drop-out = 0.1 }\n", 2, "trial[0].params.drop-out",
     "expected a parameter name"},
    {"param_name_field", "[defaults.params]\nlearning_rate = 0.1\n[[trial]]\n", 2, "defaults.params.learning_rate",
     "\"learning_rate\" is a trial field; set it as one"},
    {"param_name_placeholder", "[[trial]]\nparams = { threads = 2 }\n", 2, "trial[0].params.threads",
     "\"threads\" is a built-in placeholder ({threads}); give the parameter another name"},
    {"param_name_trial_id", "[[trial]]\nparams.trial_id = 2\n", 2, "trial[0].params.trial_id",
     "is a built-in placeholder"},
    {"param_name_program", "[[trial]]\nparams.program = 2\n", 2, "trial[0].params.program", "is a trial field"},
    {"param_table_value", "[[trial]]\nparams = { x = { y = 1 } }\n", 2, "trial[0].params.x",
     "expected a string, a number, a boolean or an array of those, found a table"},
    {"param_nested_list", "[[trial]]\nparams = { x = [[1]] }\n", 2, "trial[0].params.x[0]",
     "in a parameter's list, found an array"},
    {"param_nan", "[[trial]]\nparams = { x = nan }\n", 2, "trial[0].params.x", "expected a finite number"},
    {"params_not_table", "[[trial]]\nparams = [1]\n", 2, "trial[0].params", "expected a table of parameters"},
    {"params_longer_than_the_column",
     "[[trial]]\nprogram = ['./t']\nparams = { note = '" + std::string(600, 'x') + "' }\n", 3, "trial[0].params.note",
     "the trial's [params] take 611 bytes as JSON; the results file keeps at most 512"},
    {"grid_params_not_table", "[grid]\nparams = [{ d = 1 }]\n", 2, "grid.params",
     "one key each (e.g. params.dropout = [0.1])"},
    {"grid_param_not_list", "[grid]\nparams.d = 0.1\n", 2, "grid.params.d", "expected an array"},
    {"grid_param_bad_name", "[grid]\nparams.seed = [1, 2]\n", 2, "grid.params.seed", "is a trial field"},
    {"random_param_bad_bounds", "[random]\ncount = 2\nparams.d = { uniform = [0.5, 0.1] }\n", 3, "random.params.d",
     "expected low < high"},
    {"random_param_int_uniform_floats", "[random]\ncount = 2\nparams.d = { int_uniform = [0.5, 2] }\n", 3,
     "random.params.d", "expected a whole number"},
    {"random_env_uniform", "[random]\ncount = 2\nenv.A = { uniform = [0, 1] }\n", 3, "random.env.A", "use choice"},
};

INSTANTIATE_TEST_SUITE_P(Cases, ProgramFileErrors, ::testing::ValuesIn(kCases),
                         [](const auto& test_case) { return test_case.param.name; });

// ---------------------------------------------------------------- check_program

TrialSpec trial_with(const std::string& program_line, const std::string& extra = "") {
  const SweepSpec sweep = parse_sweep("[[trial]]\n" + program_line + "\n" + extra, "check.toml");
  EXPECT_EQ(sweep.trials.size(), 1u);
  return sweep.trials.at(0);
}

// The ConfigError check_program throws, for its place and message.
ConfigError check_error(const TrialSpec& trial) {
  try {
    check_program(trial);
  } catch (const ConfigError& error) {
    return error;
  }
  ADD_FAILURE() << "expected check_program to throw for " << trial.program->command.front();
  return ConfigError("", 0, "", "");
}

TEST(CheckProgram, FindsProgramsOnThePath) {
  EXPECT_NO_THROW(check_program(trial_with("program = ['sh', '-c', 'true']")));
  EXPECT_NO_THROW(check_program(trial_with("program = ['/bin/sh']")));
  EXPECT_NO_THROW(check_program(trial_with("[[trial]]")));  // built-in: nothing to check
}

TEST(CheckProgram, NotOnThePath) {
  const ConfigError error = check_error(trial_with("program = ['python4', 'train.py']"));
  EXPECT_EQ(error.file(), "check.toml");
  EXPECT_EQ(error.line(), 2);
  EXPECT_EQ(error.key(), "trial[0].program");
  EXPECT_THAT(error.what(), StartsWith("check.toml:2: trial[0].program: program \"python4\": not found on PATH ("));
  EXPECT_THAT(error.what(), HasSubstr(std::getenv("PATH")));
}

TEST(CheckProgram, APathThatIsMissingADirectoryOrNotExecutable) {
  const testing::TempDir dir;
  const fs::path plain = dir.write("train.sh", "#!/bin/sh\n");
  fs::permissions(plain, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  const fs::path runnable = dir.write("run.sh", "#!/bin/sh\n");
  fs::permissions(runnable, fs::perms::owner_all);
  fs::create_directories(dir.path() / "folder");

  EXPECT_NO_THROW(check_program(trial_with("program = ['" + runnable.string() + "']")));
  EXPECT_THAT(check_error(trial_with("program = ['" + plain.string() + "']")).what(),
              HasSubstr("program \"" + plain.string() + "\": not executable"));
  EXPECT_THAT(check_error(trial_with("program = ['" + (dir.path() / "folder").string() + "']")).what(),
              HasSubstr("a directory, not a program"));
  EXPECT_THAT(check_error(trial_with("program = ['" + (dir.path() / "missing").string() + "']")).what(),
              HasSubstr("/missing\": not found"));
}

TEST(CheckProgram, ARelativePathIsTheWorkdirs) {
  const testing::TempDir dir;
  const fs::path tool = dir.write("bin/tool", "#!/bin/sh\n");
  fs::permissions(tool, fs::perms::owner_all);
  const std::string workdir = "workdir = '" + dir.path().string() + "'\n";
  EXPECT_NO_THROW(check_program(trial_with("program = ['./bin/tool']", workdir)));
  const ConfigError error = check_error(trial_with("program = ['./bin/tol']", workdir));
  EXPECT_THAT(error.what(), HasSubstr("program \"./bin/tol\" (" + (dir.path() / "bin/tol").string() + "): not found"));
  // A folder only the run knows: nothing to check before it.
  EXPECT_NO_THROW(check_program(trial_with("program = ['./bin/tol']", "workdir = '{data_dir}'\n")));
}

TEST(CheckProgram, APlaceholderOnlyTheRunKnowsSkipsTheCheck) {
  EXPECT_NO_THROW(check_program(trial_with("program = ['{data_dir}/no-such-tool']")));
  // What the trial knows is filled: {model} is mlp here.
  EXPECT_THAT(check_error(trial_with("program = ['/nonexistent/{model}-train']")).what(),
              HasSubstr("program \"/nonexistent/mlp-train\": not found"));
}

TEST(CheckProgram, AProgramsTableIsReportedAtItsCommand) {
  const SweepSpec sweep =
      parse_sweep("[programs.x]\ncommand = ['no-such-program-4711']\n[[trial]]\nprogram = 'x'\n", "t.toml");
  const ConfigError error = check_error(sweep.trials.at(0));
  EXPECT_EQ(error.line(), 2);
  EXPECT_EQ(error.key(), "programs.x.command");
}

}  // namespace
}  // namespace memsweep
