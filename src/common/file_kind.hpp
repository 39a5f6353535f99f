#pragma once
// What a path names, in the words of an error message, for the commands
// that must not open or replace anything but a regular file (a FIFO blocks
// an open; a rename over a device node replaces the node).

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

namespace memsweep {

// "a directory", "a character device", "a FIFO (named pipe)", ...; "a
// regular file" for one.
std::string file_kind(mode_t mode);

// Whether the file's first bytes are HDF5's signature (false when it cannot
// be read). Call it on a regular file only.
bool starts_with_hdf5_signature(const std::filesystem::path& path);

// A path that names something, but nothing that can be opened: a symbolic
// link whose target is missing, or one that loops, or a path that cannot
// be looked at (a parent that is not a folder, no permission). Such a name
// is neither a file to read nor free for a new one, and std::filesystem's
// throwing calls turn it into a bare "filesystem error".
struct UnfollowablePath {
  std::string why;              // "a symbolic link to loop.h5 that cannot be followed (Too many ...)"
  bool target_missing = false;  // a dangling link: its target may still appear
};

// nullopt for a path that exists (followed) or plainly does not (ENOENT,
// no link in the way).
std::optional<UnfollowablePath> unfollowable_path(const std::filesystem::path& path);

}  // namespace memsweep
