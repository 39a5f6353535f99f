// Where datasets are looked for: the search list (pure), the subfolders, and
// the error that lists every place looked when the files are not there.

#include "dataset/locate.hpp"
#include "memsweep/dataset.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace memsweep {
namespace {

namespace fs = std::filesystem;
using dataset::detail::find_data_file;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

struct SearchCase {
  std::string name;
  std::optional<fs::path> cli_dir;
  std::optional<std::string> env_value;
  std::vector<fs::path> expected;
};

// Names the case in test listings (gtest would print the struct as raw bytes).
void PrintTo(const SearchCase& test_case, std::ostream* out) { *out << test_case.name; }

const fs::path kCwd = "/home/user/run";

const SearchCase kSearchCases[] = {
    {"nothing_given_means_data_under_cwd", std::nullopt, std::nullopt, {"/home/user/run/data"}},
    {"cli_absolute", fs::path("/scratch/sets"), std::nullopt, {"/scratch/sets"}},
    {"cli_relative_to_cwd", fs::path("../sets"), std::nullopt, {"/home/user/run/../sets"}},
    {"cli_wins_over_env", fs::path("/cli"), "/env", {"/cli"}},
    {"env_single", std::nullopt, "/env/sets", {"/env/sets"}},
    {"env_list_in_order", std::nullopt, "/fast/sets:shared", {"/fast/sets", "/home/user/run/shared"}},
    {"env_empty_entries_ignored", std::nullopt, ":/a::/b:", {"/a", "/b"}},
    {"env_empty_means_default", std::nullopt, "", {"/home/user/run/data"}},
    {"env_only_separators_means_default", std::nullopt, "::", {"/home/user/run/data"}},
};

class SearchDirs : public ::testing::TestWithParam<SearchCase> {};

TEST_P(SearchDirs, FollowTheCliThenTheEnvironmentThenTheDefault) {
  EXPECT_EQ(dataset_search_dirs(GetParam().cli_dir, GetParam().env_value, kCwd), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(Cases, SearchDirs, ::testing::ValuesIn(kSearchCases),
                         [](const auto& test_case) { return test_case.param.name; });

TEST(SearchDirsFromEnvironment, ReadsMemsweepData) {
  const char* saved = std::getenv("MEMSWEEP_DATA");
  const std::optional<std::string> previous = saved ? std::optional<std::string>(saved) : std::nullopt;
  ::setenv("MEMSWEEP_DATA", "/from/env:/second", 1);
  const auto dirs = dataset_search_dirs_from_environment(std::nullopt);
  ::unsetenv("MEMSWEEP_DATA");
  const auto defaults = dataset_search_dirs_from_environment(std::nullopt);
  if (previous) ::setenv("MEMSWEEP_DATA", previous->c_str(), 1);
  EXPECT_THAT(dirs, ElementsAre(fs::path("/from/env"), fs::path("/second")));
  EXPECT_THAT(defaults, ElementsAre(fs::current_path() / "data"));
}

TEST(Subfolders, NameEachDatasetsFolders) {
  EXPECT_THAT(dataset_subfolders(DatasetKind::mnist), ElementsAre("mnist"));
  EXPECT_THAT(dataset_subfolders(DatasetKind::fashion_mnist), ElementsAre("fashion-mnist"));
  EXPECT_THAT(dataset_subfolders(DatasetKind::cifar10), ElementsAre("cifar-10", "cifar-10-batches-bin"));
  EXPECT_TRUE(dataset_subfolders(DatasetKind::synthetic).empty());
}

TEST(FindDataFile, PrefersTheRawFileThenTheGzipOne) {
  const TempDir dir;
  EXPECT_EQ(find_data_file(dir.path(), "x.bin"), std::nullopt);
  dir.write("x.bin.gz", "");
  EXPECT_EQ(find_data_file(dir.path(), "x.bin"), dir.path() / "x.bin.gz");
  dir.write("x.bin", "");
  EXPECT_EQ(find_data_file(dir.path(), "x.bin"), dir.path() / "x.bin");
}

TEST(FindDataFile, IgnoresAFolderWithTheFilesName) {
  const TempDir dir;
  fs::create_directories(dir.path() / "x.bin");
  EXPECT_EQ(find_data_file(dir.path(), "x.bin"), std::nullopt);
}

void write_mnist_names(const TempDir& dir, std::string_view folder, bool with_test_files) {
  const std::string prefix = std::string(folder) + "/";
  dir.write(prefix + "train-images-idx3-ubyte.gz", "");
  dir.write(prefix + "train-labels-idx1-ubyte", "");
  if (!with_test_files) return;
  dir.write(prefix + "t10k-images-idx3-ubyte.gz", "");
  dir.write(prefix + "t10k-labels-idx1-ubyte.gz", "");
}

TEST(LocateIdx, TakesAllFilesFromTheFirstFolderThatHasThemAll) {
  const TempDir dir;
  write_mnist_names(dir, "first/mnist", false);
  write_mnist_names(dir, "second/mnist", true);
  const auto files =
      dataset::detail::locate_idx_files(DatasetKind::mnist, {dir.path() / "first", dir.path() / "second"});
  EXPECT_EQ(files.train_images, dir.path() / "second/mnist/train-images-idx3-ubyte.gz");
  EXPECT_EQ(files.train_labels, dir.path() / "second/mnist/train-labels-idx1-ubyte");
  EXPECT_EQ(files.test_labels, dir.path() / "second/mnist/t10k-labels-idx1-ubyte.gz");
}

TEST(LocateIdx, NotFoundNamesEveryPlaceLookedAndEveryExpectedName) {
  const TempDir dir;
  write_mnist_names(dir, "partial/mnist", false);
  dir.write("a-file/mnist", "");
  const std::vector<fs::path> search{dir.path() / "absent", dir.path() / "partial", dir.path() / "a-file"};
  try {
    load_dataset({DatasetKind::mnist, {}}, search);
    FAIL() << "expected DatasetNotFoundError";
  } catch (const DatasetNotFoundError& error) {
    const std::string message = error.what();
    EXPECT_THAT(message, HasSubstr("mnist not found"));
    EXPECT_THAT(message, HasSubstr((dir.path() / "absent/mnist").string() + ": no such folder"));
    EXPECT_THAT(message, HasSubstr((dir.path() / "a-file/mnist").string() + ": not a folder"));
    EXPECT_THAT(message, HasSubstr((dir.path() / "partial/mnist").string() +
                                   ": missing t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]"));
    for (const char* name :
         {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
      EXPECT_THAT(message, HasSubstr(std::string(name) + " or " + name + ".gz"));
    EXPECT_THAT(message, HasSubstr("--data-dir"));
    EXPECT_THAT(message, HasSubstr("MEMSWEEP_DATA"));
  }
}

TEST(LocateCifar, NotFoundNamesBothFolderSpellingsInEverySearchDir) {
  const TempDir dir;
  const std::vector<fs::path> search{dir.path() / "one", dir.path() / "two"};
  const std::string message = [&] {
    try {
      load_dataset({DatasetKind::cifar10, {}}, search);
    } catch (const InputError& error) {  // the CLI maps every InputError to one exit status
      EXPECT_NE(dynamic_cast<const DatasetNotFoundError*>(&error), nullptr);
      return std::string(error.what());
    }
    return std::string("no error");
  }();
  for (const char* place : {"one/cifar-10", "one/cifar-10-batches-bin", "two/cifar-10", "two/cifar-10-batches-bin"})
    EXPECT_THAT(message, HasSubstr((dir.path() / place).string() + ": no such folder"));
}

TEST(LocateAny, AnEmptySearchListSaysSo) {
  EXPECT_THAT(
      [] {
        load_dataset({DatasetKind::fashion_mnist, {}}, {});
      },
      ::testing::ThrowsMessage<DatasetNotFoundError>(HasSubstr("the search list is empty")));
}

}  // namespace
}  // namespace memsweep
