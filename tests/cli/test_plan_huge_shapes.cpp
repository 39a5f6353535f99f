// `memsweep plan` and `memsweep estimate` of trials at the sweep file's
// limits (a 64x4096x4096 input, a million channels and widths, batch 2^20):
// they finish, every such trial gets a floor and a note naming it, no size
// wraps past 2^64, and a normal trial beside them is predicted as alone.

#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

constexpr const char* kNormalTrial = R"(
[[trial]]
dataset = "synthetic"
synthetic = { shape = [3, 32, 32], classes = 10 }
model = "cnn"
channels = [16, 32]
hidden = [128]
batch_size = 64
)";

// Each beyond any machine's memory; the first one's sizes pass 2^64 bytes.
constexpr const char* kHugeTrials = R"(
[[trial]]
dataset = "synthetic"
synthetic = { shape = [64, 4096, 4096], classes = 100000, train_size = 10000000, test_size = 10000000 }
model = "cnn"
channels = [1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 1000000]
hidden = [1000000]
batch_size = 1048576
optimizer = "adam"

[[trial]]
dataset = "synthetic"
synthetic = { shape = [64, 4096, 4096], classes = 100000 }
model = "mlp"
hidden = [1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 1000000,
          1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 1000000, 1000000]
batch_size = 1048576

[[trial]]
dataset = "synthetic"
synthetic = { shape = [64, 4096, 4096], classes = 100000, train_size = 10000000 }
model = "alexnet"
hidden = [1000000, 1000000]
batch_size = 1048576

[[trial]]
dataset = "cifar-10"
model = "cnn"
channels = [1000000, 1000000, 1000000, 1000000, 1000000]
hidden = [1000000]
batch_size = 1048576
)";

constexpr std::size_t kHugeCount = 4;

// id -> the predicted cell (the table's last column: "35.89 MiB", ">= 7950.47 TiB").
std::map<std::string, std::string> predicted_by_id(const std::string& out) {
  static const std::regex kRow(R"(^([0-9a-f]{12})\s.*?\s((?:>= )?\d+(?:\.\d+)? (?:B|KiB|MiB|GiB|TiB)|\?)\s*$)");
  std::map<std::string, std::string> cells;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::smatch match;
    if (std::regex_match(line, match, kRow)) cells[match[1]] = match[2];
  }
  return cells;
}

double tebibytes(const std::string& cell) {
  static const std::regex kTiB(R"((?:>= )?(\d+(?:\.\d+)?) TiB)");
  std::smatch match;
  return std::regex_match(cell, match, kTiB) ? std::stod(match[1]) : -1.0;
}

TEST(PlanHugeShapes, EachTrialGetsAFloorAndANoteWithoutWrapping) {
  const TempDir dir;
  const auto sweep = dir.write("huge.toml", std::string("[sweep]\nname = \"huge\"\n") + kHugeTrials + kNormalTrial);
  const auto alone = dir.write("normal.toml", std::string("[sweep]\nname = \"normal\"\n") + kNormalTrial);
  // The datasets are not what is tested: an empty folder, cifar-10 missing (exit 2 after the table).
  const CommandResult result = run_memsweep({"plan", sweep.string(), "--data-dir", dir.path().string()});
  const CommandResult normal = run_memsweep({"plan", alone.string()});
  ASSERT_EQ(normal.exit_status, 0) << normal.err;

  const auto cells = predicted_by_id(result.out);
  ASSERT_EQ(cells.size(), kHugeCount + 1) << result.out << result.err;
  const auto normal_cells = predicted_by_id(normal.out);
  ASSERT_EQ(normal_cells.size(), 1u) << normal.out;
  const auto& [normal_id, normal_cell] = *normal_cells.begin();
  EXPECT_EQ(cells.at(normal_id), normal_cell) << "the huge trials change nothing for the others";
  EXPECT_TRUE(std::regex_match(normal_cell, std::regex(R"(\d+\.\d+ MiB)"))) << normal_cell;

  std::size_t floors = 0;
  for (const auto& [id, cell] : cells) {
    if (id == normal_id) continue;
    // A prediction, or a floor beyond a pebibyte with a note naming the trial.
    if (cell.starts_with(">= ")) {
      ++floors;
      EXPECT_GT(tebibytes(cell), 1024.0) << id << ": " << cell;
      EXPECT_THAT(result.err, HasSubstr(fmt::format("note: trial {}: needs at least {}", id, cell.substr(3))));
    } else {
      EXPECT_GT(tebibytes(cell), 0.0) << id << ": " << cell << "\n" << result.err;
    }
  }
  EXPECT_GE(floors, 3u) << result.out;
  // The first trial's activations alone pass 2^64 bytes (16777216 TiB): they
  // stay there instead of wrapping to a small figure.
  EXPECT_EQ(
      std::count_if(cells.begin(), cells.end(), [](const auto& cell) { return cell.second == ">= 16777216.00 TiB"; }),
      1)
      << result.out;
  EXPECT_THAT(result.err, HasSubstr("cifar-10")) << "the missing dataset is still reported";
  EXPECT_EQ(result.exit_status, 2) << result.err;
}

// Under reuse the activations are in the step arena: the note names it
// (the note once asked the floor for its activations part and failed).
TEST(PlanHugeShapes, AReusePlansNoteNamesItsStepArena) {
  const TempDir dir;
  const auto sweep = dir.write("huge.toml", R"([sweep]
name = "huge-reuse"
[[trial]]
dataset = "synthetic"
synthetic = { shape = [64, 4096, 4096], classes = 100000 }
model = "mlp"
hidden = [1000000, 1000000, 1000000, 1000000]
batch_size = 1048576
memory_plan = "reuse"
)");
  const CommandResult result = run_memsweep({"plan", sweep.string()});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const auto cells = predicted_by_id(result.out);
  ASSERT_EQ(cells.size(), 1u) << result.out;
  const auto& [id, cell] = *cells.begin();
  ASSERT_TRUE(cell.starts_with(">= ")) << cell;
  EXPECT_THAT(result.err, HasSubstr(fmt::format("note: trial {}: needs at least {}", id, cell.substr(3))));
  EXPECT_THAT(result.err, HasSubstr(", step arena ")) << result.err;
  EXPECT_THAT(result.err, ::testing::Not(HasSubstr("no prediction"))) << result.err;
}

TEST(PlanHugeShapes, ManyDistinctHugeShapesAreNotedUpToALimit) {
  std::string text =
      "[sweep]\nname = \"grid\"\n[grid]\ndataset = [\"synthetic\"]\n"
      "synthetic = [{ shape = [64, 4096, 4096] }]\nmodel = [\"mlp\"]\nbatch_size = [1048576]\nhidden = [";
  for (int width = 999'950; width <= 1'000'000; ++width) text += fmt::format("[{}], ", width);
  text += "]\n";
  const TempDir dir;
  const CommandResult result = run_memsweep({"plan", dir.write("grid.toml", text).string()});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const auto cells = predicted_by_id(result.out);
  ASSERT_EQ(cells.size(), 51u);
  for (const auto& [id, cell] : cells) EXPECT_TRUE(cell.starts_with(">= ")) << id << ": " << cell;
  std::size_t notes = 0;
  for (std::size_t at = 0; (at = result.err.find("needs at least", at)) != std::string::npos; ++at) ++notes;
  EXPECT_EQ(notes, 20u) << result.err;
  EXPECT_THAT(result.err, HasSubstr("more shapes need more than 1024.00 TiB"));
}

TEST(EstimateHugeShapes, PrintsTheFloorAsAtLeast) {
  const TempDir dir;
  const auto sweep = dir.write("huge.toml", std::string("[sweep]\nname = \"huge\"\n") + kHugeTrials);
  const CommandResult result = run_memsweep({"estimate", sweep.string()});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  std::size_t beyond = 0;
  for (std::size_t at = 0; (at = result.out.find("beyond any machine's memory", at)) != std::string::npos; ++at)
    ++beyond;
  EXPECT_GE(beyond, 3u) << result.out;
  EXPECT_THAT(result.out, HasSubstr("total, at least"));
  // 2^64 - 1 where a sum would have wrapped.
  EXPECT_THAT(result.out, HasSubstr("18446744073709551615"));
}

}  // namespace
}  // namespace memsweep::testing
