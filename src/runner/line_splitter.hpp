#pragma once
// A byte stream cut into lines of at most a given length, as a program's
// events channel and its standard output are read: whole lines go to the
// caller as they complete, a longer line is reported once (with what was
// kept of it) and the rest of it skipped to its newline, and a last line
// without its newline still counts at the end.

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace memsweep::runner::detail {

class LineSplitter {
 public:
  explicit LineSplitter(std::size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

  // `on_line(line)` for each line `bytes` completes, `on_too_long(kept)`
  // once for each line longer than the limit.
  template <typename OnLine, typename OnTooLong>
  void feed(std::string_view bytes, OnLine&& on_line, OnTooLong&& on_too_long) {
    for (std::size_t newline; (newline = bytes.find('\n')) != std::string_view::npos;) {
      if (!skipping_ && partial_.size() + newline > max_line_bytes_) {
        partial_.append(bytes.substr(0, max_line_bytes_ - std::min(max_line_bytes_, partial_.size())));
        on_too_long(std::string_view(partial_));
      } else if (!skipping_) {
        partial_.append(bytes.substr(0, newline));
        on_line(std::string_view(partial_));
      }
      partial_.clear();
      skipping_ = false;
      bytes.remove_prefix(newline + 1);
    }
    if (!skipping_) partial_.append(bytes);
    if (partial_.size() > max_line_bytes_) {
      partial_.resize(max_line_bytes_);
      on_too_long(std::string_view(partial_));  // counted once; the rest of it is skipped
      partial_.clear();
      skipping_ = true;
    }
  }

  // The stream has ended: its last line, if it had no newline.
  template <typename OnLine>
  void finish(OnLine&& on_line) {
    if (!skipping_ && !partial_.empty()) on_line(std::string_view(partial_));
    partial_.clear();
  }

  // Bytes were lost before the next ones (a drop cut a line somewhere):
  // lines resume at the next newline.
  void lose_place() {
    partial_.clear();
    skipping_ = true;
  }

 private:
  std::size_t max_line_bytes_;
  std::string partial_;    // bytes after the last newline
  bool skipping_ = false;  // inside a line longer than the limit, or cut by a loss
};

}  // namespace memsweep::runner::detail
