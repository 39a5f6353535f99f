// `memsweep summary` of a file with searches (schema 6): a capacity table,
// one line per search, after the dataset tables; none for other files.

#include "memsweep/store.hpp"
#include "memsweep/summary_text.hpp"
#include "store/store_fixtures.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The line of the output that holds `needle`, empty when none does.
std::string line_with(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  if (at == std::string::npos) return {};
  const std::size_t start = text.rfind('\n', at) + 1;
  return text.substr(start, text.find('\n', at) - start);
}

std::vector<SearchRow> three_searches() {
  SearchRow found = example_search(0);  // 2 GiB, fits 700 verified
  SearchRow unverified = example_search(1, "stopped");
  unverified.fits_verified = 0;
  unverified.limit = 512LL * 1024 * 1024;
  unverified.hidden[0] = 512;  // another configuration: its hidden widths differ
  SearchRow failed = example_search(2, "failed");
  failed.fits = -1;
  failed.does_not_fit = -1;
  failed.fit_b_mib = -1.0;
  failed.limit = 3'000'000'000;
  set_fixed(failed.message, "trial t00000000021 failed: no such dataset");
  return {found, unverified, failed};
}

SummaryInput input_with(std::vector<SearchRow> searches) {
  return SummaryInput{"results.h5", example_header(), {example_trial(0), example_trial(1)}, {}, std::move(searches)};
}

TEST(SummarySearches, ACapacityLinePerSearch) {
  const std::string out = format_summary({input_with(three_searches())});
  EXPECT_THAT(out, HasSubstr("capacity (3 searches)"));
  const std::string header = line_with(out, "configuration");
  for (const char* column : {"search", "limit", "axis", "fits", "does not fit", "MiB/unit", "trials", "status"})
    EXPECT_THAT(header, HasSubstr(column)) << column;

  const std::string found = line_with(out, "700 (verified)");
  EXPECT_THAT(found, HasSubstr("pytorch/cnn/fashion-mnist hidden=300-100"));
  EXPECT_THAT(found, HasSubstr("2 GiB"));
  EXPECT_THAT(found, HasSubstr("batch_size"));
  EXPECT_THAT(found, HasSubstr("768"));
  EXPECT_THAT(found, HasSubstr("1.50"));
  EXPECT_THAT(found, HasSubstr("found"));
  // The fields every search shares are left out of the name.
  EXPECT_THAT(found, Not(HasSubstr("lr=")));

  const std::string unverified = line_with(out, "701 unverified");
  EXPECT_THAT(unverified, HasSubstr("hidden=512-100"));
  EXPECT_THAT(unverified, HasSubstr("512 MiB"));
  EXPECT_THAT(unverified, HasSubstr("stopped"));

  const std::string failed = line_with(out, "2.79 GiB");
  EXPECT_THAT(failed, HasSubstr("failed"));
  EXPECT_THAT(failed, HasSubstr(" - "));  // no answer, no slope
  EXPECT_THAT(out, HasSubstr("search 5: trial t00000000021 failed: no such dataset"));
}

TEST(SummarySearches, NoneWithoutSearches) {
  EXPECT_THAT(format_summary({input_with({})}), Not(HasSubstr("capacity")));
}

TEST(SummarySearches, SeveralFilesNumberTheirSearches) {
  const std::string out = format_summary({input_with({example_search(0)}), input_with({example_search(1)})});
  EXPECT_THAT(out, HasSubstr("capacity (2 searches)"));
  EXPECT_THAT(line_with(out, "configuration"), HasSubstr("file"));
}

TEST(SummarySearches, TheCommandShowsTheFilesSearches) {
  const TempDir dir;
  const auto path = dir.path() / "results.h5";
  {
    ResultStore store = ResultStore::create(path, example_header(), false, StoreOptions{false});
    store.append_trial(example_trial(0));
    for (const SearchRow& row : three_searches()) store.append_search(row);
    store.close();
  }
  const CommandResult result = run_memsweep({"summary", path.string()}, dir.path().string());
  EXPECT_EQ(result.exit_status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("capacity (3 searches)"));
  EXPECT_THAT(result.out, HasSubstr("700 (verified)"));
}

}  // namespace
}  // namespace memsweep::testing
