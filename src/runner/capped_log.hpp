#pragma once
// A program's stdout and stderr on their way to its log files
// (docs/runner.md, "Programs", its output): through pipes the rank reads on
// a thread of its own, so that each log keeps at most its limit
// ([programs.NAME] log_limit, 64 MiB by default) however much the program
// writes: two programs writing 1 GB each once left 2 GB beside the results.
//
// What a user needs of a long log is its start (the configuration, the
// first error) and its end (the traceback, the last epochs): a capped log
// keeps the first half of its limit as written and the last half in a ring
// in the same file, and once the attempt ends puts it in order with one
// line between them saying how much was dropped. The rank holds no more of
// it in memory than a read's buffer and the last few KiB of stderr (a
// failure's message).

#include "common/unique_fd.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace memsweep::runner::detail {

class CappedLog {
 public:
  // `file`: an empty file open for reading and writing at `path`, or none (nothing is
  // kept but the last bytes in memory); `limit`: the most bytes the file
  // holds of the stream, beside the one line that says what was dropped
  // (0: no limit); `stream`: "stdout" or "stderr", for that line.
  CappedLog(UniqueFd file, std::filesystem::path path, std::uint64_t limit, std::string stream);
  CappedLog(CappedLog&&) = delete;
  // Puts the file in order if finish() was not called (an attempt ended by an exception).
  ~CappedLog();

  void write(std::string_view bytes) noexcept;
  // Once nothing more is written: a file past its limit becomes its head,
  // the line saying what was dropped, and its tail, in that order. The
  // problem when the file could not be written or put in order (a full
  // disk), for the trial's message; nothing otherwise. Called once.
  std::optional<std::string> finish() noexcept;

  std::uint64_t bytes_written() const { return total_; }  // of the stream, dropped bytes included
  // The last bytes written (at most kMemoryTailBytes), from memory.
  std::string tail() const { return memory_tail_; }

  // How much of the stream's end tail() holds.
  static constexpr std::size_t kMemoryTailBytes = 8192;

 private:
  void store(std::string_view bytes) noexcept;
  void fail(int error) noexcept;
  std::optional<std::string> put_in_order() noexcept;

  UniqueFd file_;
  std::filesystem::path path_;
  std::uint64_t head_bytes_ = 0;  // the first part, kept as written
  std::uint64_t ring_bytes_ = 0;  // the last part, a ring after the head; 0: no limit
  std::string stream_;
  std::uint64_t limit_ = 0;
  std::uint64_t total_ = 0;
  char head_last_ = '\n';  // the head's last byte: the dropped line starts a line of its own
  std::string memory_tail_;
  int error_ = 0;  // the first write's errno that failed; nothing is written after it
  std::uint64_t failed_at_ = 0;
  bool finished_ = false;
};

// Pure: the line put between a capped log's head and tail.
std::string dropped_line(std::string_view stream, std::uint64_t dropped, std::uint64_t head, std::uint64_t tail,
                         std::uint64_t limit);

// Pure: where byte `index` of a stream goes in a log of `head` + `ring`
// bytes (ring 0: no limit): the head as written, then the ring.
std::uint64_t log_offset(std::uint64_t index, std::uint64_t head, std::uint64_t ring);

// Reads a program's stdout and stderr pipes into their logs on a thread
// of its own, from construction until stop(): a program writing faster
// than the rank checks it is never held up by a full pipe.
class OutputPump {
 public:
  // Sees every byte of stdout as read, before any limit (on the pump's
  // thread; a chunk may end in the middle of a line).
  using Observer = std::function<void(std::string_view)>;
  // The pipes' read ends; their write ends are the program's alone.
  OutputPump(UniqueFd out, CappedLog& out_log, UniqueFd err, CappedLog& err_log, Observer on_stdout = {});
  OutputPump(OutputPump&&) = delete;
  ~OutputPump() { stop(); }
  // Reads what the pipes hold now, then ends the thread: for once the
  // program's tree is gone (a process that escaped it and still holds a
  // write end is not waited for).
  void stop() noexcept;

 private:
  void pump() noexcept;

  UniqueFd pipes_[2];
  CappedLog* logs_[2];
  Observer on_stdout_;
  Pipe wake_;
  std::thread thread_;
};

}  // namespace memsweep::runner::detail
