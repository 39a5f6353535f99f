#pragma once
// A small filesystem of its own for a results file, so that the disk fills
// up for real: a tmpfs mounted by the test (as root; the CI runs as root)
// and removed at the end. What the store and fault tests of a full disk share.

#include <cstdint>
#include <filesystem>
#include <string>

namespace memsweep::testing {

class SmallDisk {
 public:
  // A tmpfs of `kib` KiB at `folder` (created if missing).
  SmallDisk(const std::filesystem::path& folder, int kib);
  ~SmallDisk();  // unmounts (lazily when a process still has a file open there)
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& problem() const { return problem_; }  // why not mounted
  const std::filesystem::path& folder() const { return folder_; }

  // Writes a file `name` in the disk until the disk refuses more: after
  // this, a write that needs a new page fails with ENOSPC. Returns the
  // bytes written.
  std::uint64_t fill(const std::string& name = "ballast") const;
  // Removes what fill() wrote: the room comes back.
  void unfill(const std::string& name = "ballast") const;

 private:
  std::filesystem::path folder_;
  bool mounted_ = false;
  std::string problem_;
};

}  // namespace memsweep::testing
