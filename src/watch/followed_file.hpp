#pragma once
// A results file followed across the lives of its writers. A SWMR reader
// follows the writer that had the file when it opened it; after a resume (a
// new writer) or a --force (a new file under the same name) the file is
// opened again. A read that fails while a writer changes the file (a resume
// rewrites its metadata for a moment before it starts SWMR writing again) is
// tried again at the next poll, up to kMaxFailedReads in a row.

#include "watch/follower.hpp"
#include "watch/snapshot.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace memsweep::watch {

// Failed reads in a row before a poll gives up (rethrows the StoreError).
inline constexpr int kMaxFailedReads = 5;

struct FollowOptions {
  std::filesystem::path path;
  std::string trial_id;  // --trial; empty: none
  bool wait = false;     // a file not there (yet) is waited for rather than an error
};

// What one poll found.
struct FilePoll {
  enum class Outcome {
    read,           // `snapshot` holds the sweep as it stands
    absent,         // no file (with `wait`)
    being_changed,  // a read failed while a writer changed the file: poll again
  };
  Outcome outcome = Outcome::absent;
  SweepSnapshot snapshot;  // Outcome::read only
};

class FollowedFile {
 public:
  // Whether a writer has the file: writer_is_live() (store.hpp); tests give their own.
  using WriterLive = std::function<std::optional<bool>(const std::filesystem::path&)>;

  explicit FollowedFile(FollowOptions options, WriterLive writer_live = {});

  // Reads what was added since the last poll. Throws InputError for a file
  // that is not there without `wait`, and for a --trial the file's sweep does
  // not have; StoreError for a file that is not a readable memsweep file
  // while no writer is live, or after kMaxFailedReads failed reads in a row.
  // A sweep that is no longer running has its summary (format_summary()).
  FilePoll poll(std::chrono::system_clock::time_point now);

  // The follower of the file as last opened; null before a poll read it.
  const SweepFollower* follower() const { return follower_.get(); }

 private:
  std::optional<SweepSnapshot> read(std::optional<bool> live, ino_t inode, std::chrono::system_clock::time_point now);
  void open(ino_t inode);
  const std::string& summary();

  FollowOptions options_;
  WriterLive writer_live_;
  std::unique_ptr<SweepFollower> follower_;
  ino_t inode_ = 0;
  std::optional<bool> last_live_;
  int failed_reads_ = 0;
  // The summary parses the sweep text and plans every trial: made once per
  // set of rows, not at every refresh of a view left open on an ended sweep.
  std::optional<std::string> summary_;
  std::size_t summary_rows_ = 0;
};

}  // namespace memsweep::watch
