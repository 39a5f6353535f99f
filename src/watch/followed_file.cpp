#include "watch/followed_file.hpp"

#include "common/file_kind.hpp"
#include "memsweep/error.hpp"
#include "memsweep/store.hpp"
#include "memsweep/summary_text.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <optional>
#include <utility>

namespace memsweep::watch {
namespace {

std::optional<ino_t> inode_of(const std::filesystem::path& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) return std::nullopt;
  return status.st_ino;
}

}  // namespace

FollowedFile::FollowedFile(FollowOptions options, WriterLive writer_live)
    : options_(std::move(options)), writer_live_(writer_live ? std::move(writer_live) : WriterLive(writer_is_live)) {}

FilePoll FollowedFile::poll(std::chrono::system_clock::time_point now) {
  const std::optional<ino_t> inode = inode_of(options_.path);
  if (!inode) {
    // A link whose target is missing may yet get it (--wait waits); one that
    // loops, or a path that cannot be looked at, never becomes a file.
    if (const std::optional<UnfollowablePath> bad = unfollowable_path(options_.path);
        bad && (!options_.wait || !bad->target_missing))
      throw InputError(fmt::format("{}: {}; expected a results file", options_.path.string(), bad->why));
    if (!options_.wait)
      throw InputError(
          fmt::format("{}: no such file; has the sweep started? (--wait waits for it)", options_.path.string()));
    follower_.reset();
    return {};
  }
  const std::optional<bool> live = writer_live_(options_.path);
  std::optional<SweepSnapshot> snapshot = read(live, *inode, now);
  if (!snapshot) return {FilePoll::Outcome::being_changed, {}};
  return {FilePoll::Outcome::read, std::move(*snapshot)};
}

// nullopt: the read failed while a writer is live, and may be tried again.
std::optional<SweepSnapshot> FollowedFile::read(std::optional<bool> live, ino_t inode,
                                                std::chrono::system_clock::time_point now) {
  const bool writer_came_back = live == true && last_live_ == false;
  last_live_ = live;
  try {
    if (!follower_ || inode != inode_ || writer_came_back) open(inode);
    SweepSnapshot snapshot = follower_->update(live, now);
    failed_reads_ = 0;
    snapshot.path = options_.path.string();
    if (snapshot.state != SweepState::running) snapshot.summary = summary();
    return snapshot;
  } catch (const StoreError&) {
    follower_.reset();
    if (++failed_reads_ >= kMaxFailedReads || live != true) throw;
    return std::nullopt;
  }
}

const std::string& FollowedFile::summary() {
  // A search's row comes after its last trial's: either count changes the summary.
  const std::size_t rows = follower_->trial_rows().size() + follower_->search_rows().size();
  if (!summary_ || summary_rows_ != rows) {
    summary_ = format_summary({SummaryInput{
        options_.path.string(), follower_->header(), follower_->trial_rows(), {}, follower_->search_rows()}});
    summary_rows_ = rows;
  }
  return *summary_;
}

void FollowedFile::open(ino_t inode) {
  summary_.reset();
  follower_.reset();
  follower_ = std::make_unique<SweepFollower>(options_.path, options_.trial_id);
  inode_ = inode;
  if (!options_.trial_id.empty() && !follower_->plans(options_.trial_id))
    throw InputError(
        fmt::format("{}: no trial {} in its sweep (the trial ids are in memsweep summary's and "
                    "memsweep plan's tables)",
                    options_.path.string(), options_.trial_id));
}

}  // namespace memsweep::watch
