#include "store/hdf5_handles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <regex>
#include <string_view>

namespace memsweep::store {
namespace {

// A failed system call, as HDF5's file driver reports it.
constexpr std::string_view kSystemErrorMark = "errno = ";

struct Causes {
  std::string innermost;
  std::string system_error;  // the first failed system call's message, if any
};

herr_t keep_innermost(unsigned position, const H5E_error2_t* error, void* client_data) {
  auto* causes = static_cast<Causes*>(client_data);
  // Walking upward, position 0 is where the failure was detected; some
  // entries carry no description, so the first one that does is taken.
  if (error == nullptr || error->desc == nullptr || error->desc[0] == '\0') return 0;
  const std::string_view desc(error->desc);
  if (causes->innermost.empty()) causes->innermost = desc;
  if (causes->system_error.empty() && desc.find(kSystemErrorMark) != std::string_view::npos)
    causes->system_error = desc;
  (void)position;
  return 0;
}

std::atomic<bool> close_failed{false};

// At exit, after everything destroyed since (these run in the reverse order
// of their registration): HDF5's own clean-up, unless a close failed.
void end_hdf5_at_exit() {
  if (!close_failed.load()) H5close();
}

// Before main, so before any HDF5 call: H5dont_atexit() works only before
// the library starts (it then registers no clean-up of its own), and this
// registers memsweep's instead. Should some HDF5 call have come first,
// H5dont_atexit() fails and HDF5 keeps its clean-up as before.
[[maybe_unused]] const bool exit_clean_up_replaced = [] {
  if (H5dont_atexit() < 0) return false;
  std::atexit(end_hdf5_at_exit);
  return true;
}();

}  // namespace

void note_failed_close() noexcept { close_failed.store(true); }

bool a_close_failed() noexcept { return close_failed.load(); }

bool exit_clean_up_is_memsweeps() noexcept { return exit_clean_up_replaced; }

void silence_hdf5_errors() {
  thread_local bool silenced = false;
  if (silenced) return;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  silenced = true;
}

std::string innermost_hdf5_error() {
  Causes causes;
  // H5Ewalk2 does not clear the stack it walks (unlike most API calls).
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost, &causes);
  // A failed write on a full disk is what went wrong; HDF5 may stack its
  // own clean-up's failures inward of it (a close after a failed flush
  // reports "slist already enabled?" first).
  return causes.system_error.empty() ? causes.innermost : causes.system_error;
}

void Hdf5Errors::fail(std::string_view attempted) const {
  const std::string cause = innermost_hdf5_error();
  if (cause.empty()) throw StoreError(fmt::format("{}: cannot {} (HDF5 gave no reason)", file_.string(), attempted));
  throw StoreError(fmt::format("{}: cannot {}: {}", file_.string(), attempted, readable_cause(cause)));
}

std::string readable_cause(const std::string& hdf5_message) {
  // HDF5's file driver reports a failed system call as several lines of
  // "time = ..., filename = ..., errno = 28, error message = '...', buf =
  // ...": the errno and its text are what a user needs.
  static const std::regex kSystemError(R"(errno = (\d+), error message = '([^']*)')");
  std::smatch match;
  if (!std::regex_search(hdf5_message, match, kSystemError)) {
    std::string flat = hdf5_message;
    std::replace(flat.begin(), flat.end(), '\n', ' ');
    return flat;
  }
  const int number = std::stoi(match[1]);
  std::string text = fmt::format("{} (errno {})", match[2].str(), number);
  if (number == ENOSPC || number == EDQUOT || number == EFBIG)
    text += "; the file keeps what was written before: make room, then continue it with memsweep run ... --resume";
  return text;
}

void Hdf5Errors::fail_plain(std::string_view what) const {
  throw StoreError(fmt::format("{}: {}", file_.string(), what));
}

}  // namespace memsweep::store
