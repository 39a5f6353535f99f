// A sweep-file error's parts as fields of their own (file, line, key,
// detail) beside the one line what() prints; a trial built from field
// values as a one-trial sweep file would build it; the PATH lookup that
// check_program and the runner share.

#include "memsweep/config.hpp"
#include "memsweep/program.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <stdexcept>
#include <string>

namespace memsweep {
namespace {

ConfigError parse_error(const std::string& text) {
  try {
    parse_sweep(text, "sweep.toml");
  } catch (const ConfigError& error) {
    return error;
  }
  throw std::logic_error("expected a ConfigError for: " + text);
}

TEST(ConfigErrorFields, HoldThePartsOfTheLine) {
  const ConfigError error = parse_error("[[trial]]\nmodel = \"mlp\"\nbatch_size = 0\n");
  EXPECT_EQ(error.file(), "sweep.toml");
  EXPECT_EQ(error.line(), 3);
  EXPECT_EQ(error.key(), "trial[0].batch_size");
  EXPECT_EQ(error.detail(), "expected a whole number from 1 to 1048576, found 0");
  EXPECT_EQ(std::string(error.what()),
            "sweep.toml:3: trial[0].batch_size: expected a whole number from 1 to 1048576, found 0");
}

TEST(ConfigErrorFields, AnErrorOfNoKeyHasAnEmptyKey) {
  const ConfigError error = parse_error("[sweep]\nname = \"x\"\n");
  EXPECT_EQ(error.key(), "");
  EXPECT_EQ(error.line(), 1);
  EXPECT_EQ(std::string(error.what()), "sweep.toml:1: " + error.detail());
  EXPECT_NE(error.detail().find("no trials"), std::string::npos) << error.detail();
}

TEST(ConfigErrorFields, AListElementIsNamedInTheKey) {
  const ConfigError error = parse_error("[[trial]]\nhidden = [64, 0]\n");
  EXPECT_EQ(error.key(), "trial[0].hidden[1]");
  EXPECT_EQ(error.detail(), "expected a whole number from 1 to 1000000, found 0");
}

TEST(TrialFromFields, IsTheTrialOfAOneTrialSweepFile) {
  const std::vector<TrialField> fields{{"model", std::string("cnn")},
                                       {"channels", std::vector<std::int64_t>{8, 16}},
                                       {"dataset", std::string("mnist")},
                                       {"batch_size", std::int64_t{64}}};
  const TrialSpec built = trial_from_fields(fields, "command line");
  const TrialSpec parsed =
      parse_sweep("[[trial]]\nmodel = \"cnn\"\nchannels = [8, 16]\ndataset = \"mnist\"\nbatch_size = 64\n",
                  "command line")
          .trials.front();
  EXPECT_EQ(built.canonical_text(), parsed.canonical_text());
  EXPECT_EQ(built.id, parsed.id);
  EXPECT_EQ(built.origin, "command line:1 trial[0]");
  EXPECT_EQ(built.origin, parsed.origin);
  EXPECT_EQ(built.plan_index, parsed.plan_index);
  EXPECT_EQ(built.channels, (std::vector<int>{8, 16}));
  EXPECT_EQ(built.batch_size, 64);
}

TEST(TrialFromFields, ABadValueIsAConfigErrorNamingItsField) {
  try {
    trial_from_fields({{"hidden", std::vector<std::int64_t>{128, 2000000}}}, "command line");
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.key(), "trial[0].hidden[1]");
    EXPECT_EQ(error.detail(), "expected a whole number from 1 to 1000000, found 2000000");
  }
  try {
    trial_from_fields({{"model", std::string("cnn")}}, "command line");
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.key(), "trial[0].channels") << "a whole-trial check names the field that no value set";
  }
  EXPECT_THROW(trial_from_fields({{"batch", std::int64_t{4}}}, "command line"), std::invalid_argument);
}

TEST(FindOnPath, TheFirstRunnableMatchAndTheFirstProblem) {
  testing::TempDir dir;
  const auto write = [&](const std::string& name, mode_t mode) {
    const auto path = dir.write(name, "#!/bin/sh\n");
    ::chmod(path.c_str(), mode);
    return path;
  };
  write("a/tool", 0644);
  const auto runnable = write("b/tool", 0755);
  const std::string path_list = (dir.path() / "a").string() + ":" + (dir.path() / "b").string();
  std::string problem;
  EXPECT_EQ(find_on_path("tool", path_list, {}, &problem), runnable.string());
  EXPECT_EQ(problem, (dir.path() / "a/tool").string() + " is not executable");
  EXPECT_FALSE(find_on_path("missing", path_list, {}));
  // An empty entry is the folder given for it.
  EXPECT_EQ(find_on_path("tool", ":", dir.path() / "b"), runnable.string());
  EXPECT_EQ(unrunnable(dir.path()), "a directory, not a program");
  EXPECT_EQ(unrunnable(dir.path() / "nothing"), "not found");
}

}  // namespace
}  // namespace memsweep
