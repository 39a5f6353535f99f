#pragma once
// The one place memsweep touches HDF5's C API error handling and handle
// lifetimes: every hid_t is owned by a Handle that closes it, and every
// negative return becomes a StoreError that names the file, says what was
// being attempted and carries HDF5's own most specific message.

#include "memsweep/store.hpp"

#include <hdf5.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

namespace memsweep::store {

// HDF5 prints its error stack to stderr on every failure by default; the
// library here is thread-safe, which makes that setting per thread, so each
// entry point calls this (cheap after the first call on a thread).
void silence_hdf5_errors();

// The innermost (most specific) message of the calling thread's HDF5 error
// stack, e.g. "truncated file: eof = 4096, ..."; empty when there is none.
// A failed system call's message (a full disk's) when the stack holds one.
std::string innermost_hdf5_error();
// An HDF5 message for one line of an error: a failed system call (a full
// disk) as its text and errno, with what to do when the disk is full.
std::string readable_cause(const std::string& hdf5_message);

// HDF5 1.10.8 frees a file (or dataset) whose close fails, its final flush
// refused by a full disk, but keeps its identifier; the library's clean-up
// at exit closes that identifier again and crashes (SIGSEGV in
// H5F__close_cb, after memsweep's own error line). So memsweep ends the
// library itself at exit (H5close), and not at all once a close has failed:
// the process is ending, and the file keeps what its last good flush wrote
// (docs/reliability.md, A disk that fills early). Called by each Handle whose
// close fails.
void note_failed_close() noexcept;
// Whether a close failed in this process: HDF5 then holds an identifier of
// freed memory, which nothing may touch again (the exit clean-up skipped).
bool a_close_failed() noexcept;
// Whether memsweep's clean-up replaced HDF5's (false when an HDF5 call ran
// before main, too early to replace it).
bool exit_clean_up_is_memsweeps() noexcept;

// Owns one HDF5 identifier; `Close` is the matching H5?close function.
template <herr_t (*Close)(hid_t)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now, ignoring a failure (destructors, error paths).
  void reset() noexcept { close(); }
  // Closes now and returns what the close returned, for the places where a
  // failed close means lost data (the file's final flush).
  herr_t close() noexcept {
    if (id_ < 0) return 0;
    const herr_t closed = Close(std::exchange(id_, H5I_INVALID_HID));
    if (closed < 0) note_failed_close();
    return closed;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

using FileHandle = Handle<H5Fclose>;
using DatasetHandle = Handle<H5Dclose>;
using TypeHandle = Handle<H5Tclose>;
using SpaceHandle = Handle<H5Sclose>;
using PropertyHandle = Handle<H5Pclose>;
using AttributeHandle = Handle<H5Aclose>;

// Turns HDF5 failures on one file into StoreErrors:
// "results.h5: cannot extend /samples: <HDF5's message>".
class Hdf5Errors {
 public:
  explicit Hdf5Errors(std::filesystem::path file) : file_(std::move(file)) {}

  const std::filesystem::path& file() const { return file_; }

  // Returns `result` when it is not negative (an id, a size, a tri-state).
  hid_t check(hid_t result, std::string_view attempted) const {
    if (result < 0) fail(attempted);
    return result;
  }
  herr_t check(herr_t result, std::string_view attempted) const {
    if (result < 0) fail(attempted);
    return result;
  }

  // Throws StoreError for the failure HDF5 just reported.
  [[noreturn]] void fail(std::string_view attempted) const;
  // Throws StoreError without an HDF5 cause.
  [[noreturn]] void fail_plain(std::string_view what) const;

 private:
  std::filesystem::path file_;
};

}  // namespace memsweep::store
