#pragma once
// What `run --force` may replace. --force exists to start a results file
// again; a mistyped -o must not turn it into a way to destroy something else
// (the sweep file itself, /dev/null as root, another tool's HDF5 file).

#include "store/hdf5_handles.hpp"

#include <filesystem>

namespace memsweep::store {

// Throw StoreError, naming what `path` is ("a character device, not a
// results file; ..."), unless it is a regular file that is
//  - empty (a placeholder, e.g. made by a job script), or
//  - a memsweep results file: HDF5 opens it and its root's format attribute
//    is memsweep's (any schema version), or
//  - a damaged one: it starts with HDF5's signature, HDF5 cannot open it, and
//    its first kDamagedFileScanBytes hold the word "memsweep". A crashed
//    run's file whose metadata HDF5 cannot read must still be replaceable;
//    what a run writes first (the header's text, which has that word) sits
//    at the start of the file, and another tool's damaged HDF5 file is kept.
// A symbolic link is refused too: the rename that replaces the file would
// replace the link, not what it points to.
// In two steps: the kind of file first, from lstat() alone (nothing is
// opened: opening a FIFO blocks, opening a device may act on it), then,
// once the caller holds the writer's lock on it, what the file holds.
void check_replaceable_kind(const std::filesystem::path& path, const Hdf5Errors& errors);
void check_replaceable_content(const std::filesystem::path& path, const Hdf5Errors& errors);

inline constexpr std::size_t kDamagedFileScanBytes = 1 << 20;

}  // namespace memsweep::store
