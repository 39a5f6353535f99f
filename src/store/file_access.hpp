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

// A new file at `path`, which must not exist. Its space is never reused
// once freed (HDF5's file space strategy "none": no free-space managers,
// no aggregators), the rule SWMR follows by itself: a chunk of /samples
// written again moves, and its old bytes, which the flushed index still
// points at, must stay as they are until the next flush (docs/reliability.md,
// "A chunk written twice"). The space of those old copies stays in the file.
// `reuse_freed_space`: HDF5's default strategy instead (StoreLayout says why not).
FileHandle create_file(const std::filesystem::path& path, const Hdf5Errors& errors, bool reuse_freed_space = false);

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

// Puts one byte of unused space between the last thing allocated and the
// next. A block that ends at the end of allocation is taken back when freed
// (HDF5 does that under every strategy), so that the next block, the same
// chunk written again, would start where it started and overwrite it before
// the index that points at the old copy is flushed. A writer without SWMR
// calls this after a flush that left /samples ending in a partial chunk.
void fence_end_of_allocation(hid_t file, const Hdf5Errors& errors);

struct OpenedForReading {
  FileHandle file;
  bool swmr = false;  // opened with SWMR read access: refresh() sees a writer's new rows
};

// An existing file, read-only: with SWMR read access when it was written
// with SWMR (a writer may still be appending); otherwise as it was last
// flushed, ignoring (not clearing) the flag of a writer that was killed.
OpenedForReading open_file_for_reading(const std::filesystem::path& path, const Hdf5Errors& errors);

}  // namespace memsweep::store
