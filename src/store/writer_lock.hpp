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

#include "store/hdf5_handles.hpp"

#include <filesystem>
#include <optional>

namespace memsweep::store {

class WriterLock {
 public:
  WriterLock() = default;
  WriterLock(WriterLock&& other) noexcept;
  WriterLock& operator=(WriterLock&& other) noexcept;
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;
  ~WriterLock();

  // Takes the lock, held until this object goes; throws StoreError when a
  // live writer holds it.
  static WriterLock acquire(const std::filesystem::path& path, const Hdf5Errors& errors);
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
  explicit WriterLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace memsweep::store
