#pragma once
// One writer per results file. HDF5 locks a file for as long as a writer
// has it open, except in SWMR mode: a SWMR writer drops HDF5's lock so that
// readers can open the file. A resume that cleared the "open for writing"
// flag of a live SWMR writer would then write beside it and ruin the file,
// so memsweep's writers also take a lock of their own: a Linux
// open-file-description lock on one byte far past any data (HDF5 locks with
// flock(), readers too, and the two kinds do not interact on local
// filesystems). The kernel drops it when the writer dies, killed or not.
// Where such locks are not supported the lock is skipped.
//
// A lock belongs to a file (an inode), not to its name, and --force renames a
// new file onto the name. So a lock is taken on the file the name holds
// *after* locking: a name that no longer holds the locked file (replaced
// meanwhile) is looked up again. And a replacement holds the lock on the file
// it replaces until its own file, already locked, has the name
// (acquire_to_replace): a second --force, or a resume, then finds one of the
// two locked at every moment. No lock file beside the results: nothing to
// leave behind, and a killed run's lock goes with it.

#include "common/unique_fd.hpp"
#include "store/hdf5_handles.hpp"

#include <filesystem>
#include <optional>
#include <utility>

namespace memsweep::store {

class WriterLock {
 public:
  // Moves with its descriptor; closing it (the object gone) releases the lock.
  WriterLock() = default;

  // Takes the lock on the file at `path`, held until this object goes;
  // throws StoreError when a live writer holds it.
  static WriterLock acquire(const std::filesystem::path& path, const Hdf5Errors& errors);
  // Before --force replaces the file at `path`: its lock, to hold until the
  // replacement has the name. Throws StoreError as check_free() does when a
  // live writer (with or without SWMR) has the file.
  static WriterLock acquire_to_replace(const std::filesystem::path& path, const Hdf5Errors& errors);
  // Throws StoreError when a live writer has the file, without taking the
  // lock: memsweep's lock (a SWMR writer) or HDF5's (a writer without SWMR).
  // For a writer without SWMR, which HDF5's lock then protects (on NFS, where
  // SWMR is not supported, both kinds of lock would be the same lock), and
  // before a file is replaced.
  static void check_free(const std::filesystem::path& path, const Hdf5Errors& errors);
  // Whether a live memsweep writer holds its lock on `path`; nullopt when
  // the file cannot be opened or the lock cannot be queried. Only queries
  // (F_OFD_GETLK): it never takes a lock, so it never gets in a writer's way.
  static std::optional<bool> is_held(const std::filesystem::path& path);
  // Whether HDF5's exclusive lock is held: a writer without SWMR has the file
  // open. Takes a shared lock for a moment to find out, which would make a
  // writer's open fail in that moment: only for files not written with SWMR.
  static bool hdf5_lock_held(const std::filesystem::path& path);

 private:
  explicit WriterLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace memsweep::store
