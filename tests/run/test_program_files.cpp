// What a program trial leaves on the disk, end to end under mpirun
// (issue 43): concurrent trials writing the same file name in a shared
// working directory, and each in its own {trial_dir} instead (item 12); a
// program writing far more than its logs keep (item 6).

#include "run/results_file.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The issue's script at its smallest: a PyTorch model saved as model.pt in
// the working directory and read back. Each trial waits, after its save,
// until both have saved (a file each in `barrier`), so that the two run
// at once whatever the machine's load: in a shared folder the first to
// save then reads the other's weights.
constexpr const char* kSaveAndLoad = R"py(import os, sys, time
import torch
tag, barrier = sys.argv[1], sys.argv[2]
model = torch.nn.Linear(4, 2)
with torch.no_grad():
    model.weight.fill_(float(tag))
torch.save(model.state_dict(), "model.pt")
open(os.path.join(barrier, tag), "w").close()
deadline = time.time() + 120
while len(os.listdir(barrier)) < 2 and time.time() < deadline:
    time.sleep(0.05)
read = float(torch.load("model.pt")["weight"][0, 0])
if read != float(tag):
    sys.exit(f"model.pt holds another trial's weights ({read}), not this one's ({tag})")
)py";

std::string save_sweep(const fs::path& script, const fs::path& barrier, const std::string& folder_keys) {
  return fmt::format(R"([sweep]
name = "shared-cwd"
[programs.save]
command = ["/usr/bin/python3", "{}", "{{tag}}", "{}"]
{}
[defaults]
program = "save"
[grid]
params.tag = [1, 2]
)",
                     script.string(), barrier.string(), folder_keys);
}

std::vector<std::string> statuses(const fs::path& results) {
  const TsvTable trials = h5py_table(results, "trials");
  std::vector<std::string> found;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) found.push_back(trials.at(row, "status"));
  std::sort(found.begin(), found.end());
  return found;
}

TEST(ConcurrentProgramTrials, ShareTheRunsFolderButNotTheirTrialDirs) {
  const TempDir dir;
  const fs::path script = dir.write("save.py", kSaveAndLoad);
  const std::map<std::string, std::string> environment{{"OMP_NUM_THREADS", "1"}};

  // As the issue found it: both trials in the run's folder, two workers.
  const fs::path shared = dir.path() / "shared";
  fs::create_directories(shared / "barrier");
  const std::string before =
      dir.write("before.toml", save_sweep(script, shared / "barrier", "workdir = \"" + shared.string() + "\""))
          .string();
  const fs::path before_out = dir.path() / "before.h5";
  const CommandResult shared_run = run_command(
      on_ranks(MEMSWEEP_MPIEXEC, 3, memsweep_argv({"run", before, "-o", before_out.string(), "-q"})), "", environment);
  EXPECT_THAT(statuses(before_out), ::testing::ElementsAre("failed", "ok")) << shared_run.err;
  const TsvTable messages = h5py_table(before_out, "trials");
  bool told = false;
  for (std::size_t row = 0; row < messages.rows.size(); ++row)
    told = told || messages.at(row, "message").find("holds another trial's weights") != std::string::npos;
  EXPECT_TRUE(told) << "the shared model.pt was read back by the other trial";

  // Each in its own {trial_dir}: both ok, each folder with its own model.pt.
  fs::create_directories(dir.path() / "barrier2");
  const std::string after = dir.write("after.toml", save_sweep(script, dir.path() / "barrier2",
                                                               "workdir = \"{trial_dir}\"\nkeep_trial_dir = true"))
                                .string();
  const fs::path after_out = dir.path() / "after.h5";
  const CommandResult own_run = run_command(
      on_ranks(MEMSWEEP_MPIEXEC, 3, memsweep_argv({"run", after, "-o", after_out.string(), "-q"})), "", environment);
  EXPECT_EQ(own_run.exit_status, 0) << own_run.err;
  EXPECT_THAT(statuses(after_out), ::testing::ElementsAre("ok", "ok")) << own_run.err;
  const TsvTable trials = h5py_table(after_out, "trials");
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    const fs::path folder = dir.path() / "after.logs" / (trials.at(row, "trial_id") + "-0");
    EXPECT_TRUE(fs::exists(folder / "model.pt")) << folder << " (keep_trial_dir = true)";
  }
  EXPECT_FALSE(fs::exists(dir.path() / "model.pt"));
}

// Two programs writing 200 MB each on stdout, under the default limit:
// each log 64 MiB and a line, its head and tail the program's own.
TEST(ProgramLogs, KeepTheDefault64MiBOfAProgramWriting200MB) {
  const TempDir dir;
  const std::string sweep = dir.write("loud.toml", R"([sweep]
name = "loud"
[[trial]]
program = ["sh", "-c", "yes 'the same line, again and again' | head -c 200000000; echo last line", "sh", "{batch_size}"]
batch_size = 1
[[trial]]
program = ["sh", "-c", "yes 'the same line, again and again' | head -c 200000000; echo last line", "sh", "{batch_size}"]
batch_size = 2
)")
                                .string();
  const fs::path out = dir.path() / "loud.h5";
  const CommandResult run =
      run_command(on_ranks(MEMSWEEP_MPIEXEC, 3, memsweep_argv({"run", sweep, "-o", out.string(), "-q"})), "",
                  {{"OMP_NUM_THREADS", "1"}});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  std::uintmax_t total = 0;
  int logs = 0;
  for (const auto& entry : fs::directory_iterator(dir.path() / "loud.logs")) {
    if (entry.path().extension() != ".out") continue;
    ++logs;
    total += entry.file_size();
    EXPECT_LE(entry.file_size(), (64U << 20) + 200) << entry.path();
    std::ifstream in(entry.path());
    std::string first;
    std::getline(in, first);
    EXPECT_EQ(first, "the same line, again and again");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // yes's stream cut at 200,000,000 bytes (mid-line), then the last line.
    const std::string line = "the same line, again and again\n";
    std::string end;
    for (std::size_t i = 200000000 - 100; i < 200000000; ++i) end += line[i % line.size()];
    end += "last line\n";
    EXPECT_TRUE(text.ends_with(end)) << entry.path();
    EXPECT_THAT(text, HasSubstr(fmt::format("[memsweep: {} bytes of stdout dropped here", 200000010 - (64 << 20))));
  }
  EXPECT_EQ(logs, 2);
  std::cout << fmt::format("two programs writing 200 MB each: {} logs, {:.1f} MiB in all\n", logs,
                           static_cast<double>(total) / (1 << 20));
}

}  // namespace
}  // namespace memsweep::testing
