#include "store/hdf5_handles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <regex>

namespace memsweep::store {
namespace {

herr_t keep_innermost(unsigned position, const H5E_error2_t* error, void* client_data) {
  auto* message = static_cast<std::string*>(client_data);
  // Walking upward, position 0 is where the failure was detected; some
  // entries carry no description, so the first one that does is taken.
  if (message->empty() && error != nullptr && error->desc != nullptr && error->desc[0] != '\0') {
    *message = error->desc;
  }
  (void)position;
  return 0;
}

}  // namespace

void silence_hdf5_errors() {
  thread_local bool silenced = false;
  if (silenced) return;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  silenced = true;
}

std::string innermost_hdf5_error() {
  std::string message;
  // H5Ewalk2 does not clear the stack it walks (unlike most API calls).
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost, &message);
  return message;
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
