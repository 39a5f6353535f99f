#pragma once
// What a path names, in the words of an error message, for the commands
// that must not open or replace anything but a regular file (a FIFO blocks
// an open; a rename over a device node replaces the node).

#include <sys/types.h>

#include <filesystem>
#include <string>

namespace memsweep {

// "a directory", "a character device", "a FIFO (named pipe)", ...; "a
// regular file" for one.
std::string file_kind(mode_t mode);

// Whether the file's first bytes are HDF5's signature (false when it cannot
// be read). Call it on a regular file only.
bool starts_with_hdf5_signature(const std::filesystem::path& path);

}  // namespace memsweep
