#pragma once
// Creating and opening the results file at the HDF5 level, with a
// diagnosis when an existing file cannot be opened: missing, not HDF5,
// truncated or damaged, locked by a writer.

#include "store/hdf5_handles.hpp"

#include <filesystem>

namespace memsweep::store {

// For writing: the latest file format (superblock v3), which SWMR requires
// and which has the superblock's "open for writing" status flag.
PropertyHandle file_access_properties(bool for_writing, bool clear_status_flags, const Hdf5Errors& errors);

// A new file at `path`, which must not exist.
FileHandle create_file(const std::filesystem::path& path, const Hdf5Errors& errors);

// An existing file, read-only and as last flushed, ignoring (not clearing)
// the flag of a writer that was killed: for a writer to check what the file
// is before it opens it for writing (which would change it).
FileHandle open_file_to_inspect(const std::filesystem::path& path, const Hdf5Errors& errors);

// An existing file, read-write, for a writer to continue it. The "open for
// writing" status flag that a killed writer leaves in the superblock is
// cleared, as `h5clear -s` does; callers make sure no live writer has the
// file (WriterLock) before calling this.
FileHandle open_file_for_writing(const std::filesystem::path& path, const Hdf5Errors& errors);

// A writer killed during a flush can leave the superblock's end of
// allocation (EOA) behind the rows its flushed index points at; HDF5 then
// refuses to read them ("addr overflow"). This raises the open file's EOA to
// the file's size, as `h5clear --increment=0` does: in memory only for a
// read-only file, in the file for a writer. Also how a reader keeps up with
// a writer that grew the file.
void address_whole_file(hid_t file, const Hdf5Errors& errors);

struct OpenedForReading {
  FileHandle file;
  bool swmr = false;  // opened with SWMR read access: refresh() sees a writer's new rows
};

// An existing file, read-only: with SWMR read access when it was written
// with SWMR (a writer may still be appending); otherwise as it was last
// flushed, ignoring (not clearing) the flag of a writer that was killed.
OpenedForReading open_file_for_reading(const std::filesystem::path& path, const Hdf5Errors& errors);

}  // namespace memsweep::store
