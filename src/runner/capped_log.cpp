#include "runner/capped_log.hpp"

#include "memsweep/byte_size.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <vector>

namespace memsweep::runner::detail {
namespace {

constexpr std::uint64_t kNoLimit = std::numeric_limits<std::uint64_t>::max();
// One read of a pipe: what Linux's default pipe holds.
constexpr std::size_t kReadBytes = 64 * 1024;
// At stop(), what is read of each pipe at most: its buffer and whatever a
// process that escaped the tree adds meanwhile, not for ever.
constexpr std::uint64_t kDrainLimitBytes = 16 << 20;

bool write_at(int fd, const char* data, std::size_t size, std::uint64_t offset, int& error) {
  while (size > 0) {
    const ssize_t wrote = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      error = wrote < 0 ? errno : ENOSPC;
      return false;
    }
    data += wrote;
    size -= static_cast<std::size_t>(wrote);
    offset += static_cast<std::uint64_t>(wrote);
  }
  return true;
}

// [from, from + size) of `in` to the end of `out`: in the kernel where it
// can (copy_file_range), else through a buffer.
bool copy_range(int in, int out, std::uint64_t from, std::uint64_t size, std::uint64_t& out_offset, int& error) {
  while (size > 0) {
    loff_t in_at = static_cast<loff_t>(from);
    loff_t out_at = static_cast<loff_t>(out_offset);
    const ssize_t copied = ::copy_file_range(in, &in_at, out, &out_at, size, 0);
    if (copied < 0 && errno == EINTR) continue;
    if (copied <= 0) break;
    from += static_cast<std::uint64_t>(copied);
    out_offset += static_cast<std::uint64_t>(copied);
    size -= static_cast<std::uint64_t>(copied);
  }
  std::vector<char> buffer(size > 0 ? std::min<std::uint64_t>(size, 1 << 20) : 0);
  while (size > 0) {
    const ssize_t got =
        ::pread(in, buffer.data(), std::min<std::uint64_t>(size, buffer.size()), static_cast<off_t>(from));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      error = got < 0 ? errno : EIO;
      return false;
    }
    if (!write_at(out, buffer.data(), static_cast<std::size_t>(got), out_offset, error)) return false;
    from += static_cast<std::uint64_t>(got);
    out_offset += static_cast<std::uint64_t>(got);
    size -= static_cast<std::uint64_t>(got);
  }
  return true;
}

}  // namespace

std::uint64_t log_offset(std::uint64_t index, std::uint64_t head, std::uint64_t ring) {
  if (ring == 0 || index < head) return index;
  return head + (index - head) % ring;
}

std::string dropped_line(std::string_view stream, std::uint64_t dropped, std::uint64_t head, std::uint64_t tail,
                         std::uint64_t limit) {
  return fmt::format(
      "[memsweep: {} bytes of {} dropped here: the log keeps the first {} and the last {} of each attempt "
      "(log_limit = {})]\n",
      dropped, stream, format_byte_size(head), format_byte_size(tail), format_byte_size(limit));
}

CappedLog::CappedLog(UniqueFd file, std::filesystem::path path, std::uint64_t limit, std::string stream)
    : file_(std::move(file)), path_(std::move(path)), stream_(std::move(stream)), limit_(limit) {
  head_bytes_ = limit == 0 ? kNoLimit : limit / 2;
  ring_bytes_ = limit == 0 ? 0 : limit - head_bytes_;
}

CappedLog::~CappedLog() {
  if (!finished_) finish();
}

void CappedLog::write(std::string_view bytes) noexcept {
  if (bytes.empty()) return;
  try {
    memory_tail_.append(bytes.size() > kMemoryTailBytes ? bytes.substr(bytes.size() - kMemoryTailBytes) : bytes);
    if (memory_tail_.size() > kMemoryTailBytes) memory_tail_.erase(0, memory_tail_.size() - kMemoryTailBytes);
  } catch (...) {  // no memory for it: a failure's message lacks its end
  }
  store(bytes);
}

// Each byte at its place: the head's bytes once, the ring's over the oldest.
void CappedLog::store(std::string_view bytes) noexcept {
  while (!bytes.empty()) {
    const std::uint64_t offset = log_offset(total_, head_bytes_, ring_bytes_);
    const std::uint64_t room = total_ < head_bytes_ ? head_bytes_ - total_ : head_bytes_ + ring_bytes_ - offset;
    const std::size_t part = static_cast<std::size_t>(std::min<std::uint64_t>(room, bytes.size()));
    if (total_ < head_bytes_ && total_ + part == head_bytes_) head_last_ = bytes[part - 1];
    if (file_ && error_ == 0 && !write_at(file_.get(), bytes.data(), part, offset, error_)) failed_at_ = total_;
    total_ += part;
    bytes.remove_prefix(part);
  }
}

std::optional<std::string> CappedLog::finish() noexcept {
  if (finished_) return std::nullopt;
  finished_ = true;
  try {
    if (error_ != 0)
      return fmt::format("its {} log {} could not be written past byte {} ({}): the rest of its {} is not in it",
                         stream_, path_.string(), failed_at_, std::strerror(error_), stream_);
    return put_in_order();
  } catch (...) {
    return fmt::format("its {} log {} could not be put in order", stream_, path_.string());
  }
}

// A log past its limit is its head, then its ring from the oldest byte on:
// written out in that order to a new file that replaces it.
std::optional<std::string> CappedLog::put_in_order() noexcept {
  if (!file_ || path_.empty() || ring_bytes_ == 0 || total_ <= head_bytes_ + ring_bytes_) return std::nullopt;
  const std::uint64_t dropped = total_ - head_bytes_ - ring_bytes_;
  const std::uint64_t oldest = log_offset(total_, head_bytes_, ring_bytes_);
  std::string line = dropped_line(stream_, dropped, head_bytes_, ring_bytes_, limit_);
  if (head_last_ != '\n') line.insert(0, "\n");
  const std::filesystem::path ordered = path_.string() + ".part";
  UniqueFd out(::open(ordered.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  int error = out ? 0 : errno;
  std::uint64_t at = 0;
  const auto copy = [&](std::uint64_t from, std::uint64_t size) {
    return copy_range(file_.get(), out.get(), from, size, at, error);
  };
  bool copied = out && copy(0, head_bytes_) && write_at(out.get(), line.data(), line.size(), at, error);
  at += line.size();
  copied = copied && copy(oldest, head_bytes_ + ring_bytes_ - oldest) && copy(head_bytes_, oldest - head_bytes_);
  if (copied && ::rename(ordered.c_str(), path_.c_str()) == 0) return std::nullopt;
  if (error == 0) error = errno;
  ::unlink(ordered.c_str());
  return fmt::format(
      "its {} log {} could not be put in order ({}): it holds the first {} as written, then the last {} in a ring "
      "(its oldest byte at offset {})",
      stream_, path_.string(), std::strerror(error), format_byte_size(head_bytes_), format_byte_size(ring_bytes_),
      oldest);
}

OutputPump::OutputPump(UniqueFd out, CappedLog& out_log, UniqueFd err, CappedLog& err_log, Observer on_stdout)
    : pipes_{std::move(out), std::move(err)},
      logs_{&out_log, &err_log},
      on_stdout_(std::move(on_stdout)),
      wake_(make_pipe("the program output's reader")) {
  for (const UniqueFd& pipe : pipes_)
    if (pipe) ::fcntl(pipe.get(), F_SETFL, ::fcntl(pipe.get(), F_GETFL) | O_NONBLOCK);
  thread_ = std::thread([this] { pump(); });
}

void OutputPump::stop() noexcept {
  if (!thread_.joinable()) return;
  const char stop = 1;
  [[maybe_unused]] const ssize_t wrote = ::write(wake_.write_end.get(), &stop, 1);
  thread_.join();
}

namespace {

enum class ReadResult { data, empty, ended };

}  // namespace

void OutputPump::pump() noexcept {
  // The rank's signals are for its main thread.
  sigset_t all;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::vector<char> buffer(kReadBytes);
  // One read of pipe `i` into its log.
  const auto read_once = [&](int i) {
    const ssize_t got = ::read(pipes_[i].get(), buffer.data(), buffer.size());
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) return ReadResult::empty;
    if (got <= 0) return ReadResult::ended;
    const std::string_view bytes(buffer.data(), static_cast<std::size_t>(got));
    if (i == 0 && on_stdout_) {
      try {
        on_stdout_(bytes);
      } catch (...) {  // the observer's own failure: the log still gets the bytes
      }
    }
    logs_[i]->write(bytes);
    return ReadResult::data;
  };
  std::array<bool, 2> open{static_cast<bool>(pipes_[0]), static_cast<bool>(pipes_[1])};
  for (;;) {
    if (!open[0] && !open[1]) return;  // both ended: every writer is gone
    std::array<pollfd, 3> fds{pollfd{wake_.read_end.get(), POLLIN, 0},
                              pollfd{open[0] ? pipes_[0].get() : -1, POLLIN, 0},
                              pollfd{open[1] ? pipes_[1].get() : -1, POLLIN, 0}};
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) break;
    for (int i = 0; i < 2; ++i)
      if (open[i] && fds[i + 1].revents != 0) open[i] = read_once(i) != ReadResult::ended;
  }
  // stop(): what the pipes hold now.
  for (int i = 0; i < 2; ++i) {
    std::uint64_t drained = 0;
    while (open[i] && drained < kDrainLimitBytes) {
      const ReadResult result = read_once(i);
      if (result != ReadResult::data) break;
      drained += kReadBytes;
    }
  }
}

}  // namespace memsweep::runner::detail
