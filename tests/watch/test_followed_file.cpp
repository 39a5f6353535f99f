// FollowedFile follows a results file across the lives of its writers: a
// file replaced under its name is opened again, one that disappears is
// waited for (with --wait), and a read that fails while a writer is live is
// tried again at the next poll, a few times. The files are real ones written
// by the store; whether a writer is live is the test's to say.

#include "memsweep/config.hpp"
#include "memsweep/error.hpp"
#include "memsweep/store.hpp"
#include "store/store_fixtures.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"
#include "watch/followed_file.hpp"
#include "watch/watch_fixtures.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace memsweep::watch {
namespace {

using memsweep::testing::ChildProcess;
using ::testing::HasSubstr;
using Outcome = FilePoll::Outcome;

std::vector<TrialSpec> sweep_trials() { return memsweep::testing::follow_sweep_trials(); }

// A closed results file at `path` named `sweep_name`, with an `ok` row for
// the first `done` trials. Written beside `path` and renamed over it, as
// --force replaces a file: `path` gets a new inode.
void write_results(const std::filesystem::path& path, const std::string& sweep_name, std::size_t done) {
  FileHeader header = memsweep::testing::follow_header();
  header.sweep_name = sweep_name;
  const std::filesystem::path beside = path.string() + ".new";
  {
    ResultStore store = ResultStore::create(beside, header, false, StoreOptions{true});
    const std::vector<TrialSpec> trials = sweep_trials();
    for (std::size_t i = 0; i < done; ++i) {
      TrialRow row = trial_row_for(trials[i], 0);
      set_fixed(row.status, "ok");
      store.append_trial(row);
    }
    store.close();
  }
  std::filesystem::rename(beside, path);
}

// Not a memsweep file, as a file is for a moment while a resume rewrites it.
void write_garbage(const std::filesystem::path& path) {
  const std::filesystem::path beside = path.string() + ".new";
  std::ofstream(beside) << "not an HDF5 file\n";
  std::filesystem::rename(beside, path);
}

// A liveness the test sets.
struct Liveness {
  std::optional<bool> live = false;
  FollowedFile::WriterLive query() {
    return [this](const std::filesystem::path&) { return live; };
  }
};

FilePoll poll(FollowedFile& file) { return file.poll(std::chrono::system_clock::now()); }

TEST(FollowedFile, AFileReplacedUnderItsNameIsOpenedAgain) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  Liveness liveness;
  FollowedFile file({path, {}, false}, liveness.query());
  write_results(path, "first", 1);

  const FilePoll before = poll(file);
  ASSERT_EQ(before.outcome, Outcome::read);
  EXPECT_EQ(before.snapshot.sweep_name, "first");
  EXPECT_EQ(before.snapshot.path, path.string());
  EXPECT_EQ(before.snapshot.state, SweepState::stopped);
  EXPECT_EQ(before.snapshot.done, 1);
  // Not running: the summary, as `memsweep summary` writes it.
  EXPECT_THAT(before.snapshot.summary, HasSubstr("sweep \"first\""));
  EXPECT_THAT(before.snapshot.summary, HasSubstr("3 not run yet"));

  write_results(path, "second", 4);  // --force: a new file, a new inode
  const FilePoll after = poll(file);
  ASSERT_EQ(after.outcome, Outcome::read);
  EXPECT_EQ(after.snapshot.sweep_name, "second") << "the header is read when the file is opened";
  EXPECT_EQ(after.snapshot.state, SweepState::finished);
  EXPECT_EQ(after.snapshot.done, 4);
  EXPECT_THAT(after.snapshot.summary, HasSubstr("sweep \"second\""));
}

TEST(FollowedFile, WithWaitAFileThatIsNotThereIsWaitedForUntilItComes) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  Liveness liveness;
  FollowedFile file({path, {}, true}, liveness.query());

  EXPECT_EQ(poll(file).outcome, Outcome::absent);
  EXPECT_EQ(file.follower(), nullptr);
  write_results(path, "first", 1);
  EXPECT_EQ(poll(file).outcome, Outcome::read);
  EXPECT_NE(file.follower(), nullptr);

  std::filesystem::remove(path);
  EXPECT_EQ(poll(file).outcome, Outcome::absent);
  EXPECT_EQ(file.follower(), nullptr) << "the file gone, its reader is let go";

  write_results(path, "again", 2);  // (4 planned: stopped)
  const FilePoll back = poll(file);
  ASSERT_EQ(back.outcome, Outcome::read);
  EXPECT_EQ(back.snapshot.sweep_name, "again");
  EXPECT_EQ(back.snapshot.done, 2);
}

TEST(FollowedFile, WithoutWaitAFileThatIsNotThereIsAnError) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  Liveness liveness;
  FollowedFile file({path, {}, false}, liveness.query());
  try {
    poll(file);
    FAIL() << "no error for a missing file";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr(path.string() + ": no such file"));
    EXPECT_THAT(error.what(), HasSubstr("--wait"));
  }
}

TEST(FollowedFile, AFailedReadWhileAWriterIsLiveIsTriedAgainThenGivenUp) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  Liveness liveness;
  liveness.live = true;
  FollowedFile file({path, {}, false}, liveness.query());

  write_garbage(path);
  for (int i = 1; i < kMaxFailedReads; ++i) EXPECT_EQ(poll(file).outcome, Outcome::being_changed) << "read " << i;
  // The writer done with it: a good read starts the count again.
  write_results(path, "first", 1);
  const FilePoll good = poll(file);
  ASSERT_EQ(good.outcome, Outcome::read);
  EXPECT_EQ(good.snapshot.sweep_name, "first");
  EXPECT_EQ(good.snapshot.state, SweepState::running) << "a live writer";

  write_garbage(path);
  for (int i = 1; i < kMaxFailedReads; ++i) EXPECT_EQ(poll(file).outcome, Outcome::being_changed) << "read " << i;
  EXPECT_THROW(poll(file), StoreError);
}

TEST(FollowedFile, AnUnreadableFileWithoutALiveWriterIsAnErrorAtOnce) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_garbage(path);
  for (const std::optional<bool> live : {std::optional<bool>(false), std::optional<bool>()}) {
    Liveness liveness;
    liveness.live = live;
    FollowedFile file({path, {}, true}, liveness.query());
    EXPECT_THROW(poll(file), StoreError) << "live: " << (live ? "false" : "cannot tell");
  }
}

TEST(FollowedFile, AResumedFileHasTheNewWritersRowsSeen) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_results(path, "first", 1);
  // A resume: the same file, a new writer, in a process of its own (started
  // before this one opens the file: HDF5 keeps a process's files open apart).
  ChildProcess resume([&](const ChildProcess::Channel& parent) {
    parent.receive();
    ResultStore store =
        ResultStore::open_for_resume(path, memsweep::testing::example_run("memsweep run"), StoreOptions{true});
    TrialRow row = trial_row_for(sweep_trials()[1], 0);
    set_fixed(row.status, "ok");
    store.append_trial(row);
    store.close();
  });
  Liveness liveness;
  FollowedFile file({path, {}, false}, liveness.query());
  const FilePoll before = poll(file);
  ASSERT_EQ(before.outcome, Outcome::read);
  EXPECT_EQ(before.snapshot.done, 1);

  resume.send('r');
  ASSERT_EQ(resume.wait(), 0);
  liveness.live = true;
  const FilePoll resumed = poll(file);
  ASSERT_EQ(resumed.outcome, Outcome::read);
  EXPECT_EQ(resumed.snapshot.done, 2);
  EXPECT_EQ(resumed.snapshot.state, SweepState::running);
}

TEST(FollowedFile, ATrialTheSweepDoesNotHaveIsAnError) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_results(path, "first", 1);
  Liveness liveness;
  FollowedFile file({path, "t00000000000", false}, liveness.query());
  try {
    poll(file);
    FAIL() << "no error for a trial the sweep does not have";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr(path.string() + ": no trial t00000000000 in its sweep"));
  }
}

}  // namespace
}  // namespace memsweep::watch
