#pragma once
// A decoded dataset shared by every process of a node that trains on it:
// the first process that needs it decodes it once into a file of a memory
// filesystem (/dev/shm, or $MEMSWEEP_SHM), named by its content and limits;
// every trial process maps that file read-only. Without it each rank held a
// private copy (210 MiB for MNIST), 64 copies on a 64-rank node.
//
// A copy appears under its name only once it is complete and checked, so a
// process killed while decoding leaves nothing a later one could trust; a
// file under that name that is damaged or of another format version is
// replaced. Each holder keeps a shared lock on the file; the last one to let
// go removes it. docs/runner.md describes the file and its life.

#include "memsweep/dataset.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep {

// The folder cannot hold a shared copy (missing, not writable, full). The
// message names the folder and what went wrong.
class SharedDatasetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::string_view kSharedDirEnvVar = "MEMSWEEP_SHM";
inline constexpr std::string_view kDefaultSharedDir = "/dev/shm";

// $MEMSWEEP_SHM when set and not empty, else /dev/shm.
std::filesystem::path shared_dataset_dir_from_environment();

struct SharedDatasetRequest {
  DatasetSpec spec;
  std::vector<std::filesystem::path> search_dirs;  // where real datasets are looked for
  std::size_t max_train_examples = 0;              // keep only the first N of each split; 0: all
  std::size_t max_test_examples = 0;
};

// What names a copy (16 hex digits): the dataset spec, the limits, the file
// format's version and, for a real dataset, each source file's path, size,
// modification time and inode, so a changed file never reuses an old copy.
// Throws DatasetNotFoundError when the files are not there.
std::string shared_dataset_key(const SharedDatasetRequest& request);

// One process's hold on a shared copy: an open descriptor (to pass to a
// trial process) with a shared lock on the file.
class SharedDataset {
 public:
  // The copy for `request` in `dir`: found and checked, or decoded and
  // created (one process of a node decodes, the others wait for it and
  // use its copy). A copy found that no other process holds (left by an
  // earlier run) is checked in full, its checksum included; one that others
  // hold was checked by the first of them, and only its header is checked.
  // Throws DatasetError and DatasetNotFoundError from the loaders,
  // SharedDatasetError when `dir` cannot hold the copy.
  static SharedDataset open(const SharedDatasetRequest& request, const std::filesystem::path& dir);

  SharedDataset(SharedDataset&&) noexcept;
  SharedDataset& operator=(SharedDataset&&) noexcept;
  // Closes; removes the file when no other process holds it. Never throws.
  ~SharedDataset();

  int fd() const;  // read-only, close-on-exec: dup it into a trial process
  const std::filesystem::path& path() const;
  const std::string& name() const;  // dataset_name(spec.kind)
  const DatasetSpec& spec() const;
  std::size_t train_examples() const;
  std::size_t test_examples() const;
  std::uint64_t file_bytes() const;
  bool decoded_here() const;    // this call decoded the dataset; false: it found the copy
  double open_seconds() const;  // what open() took, decoding included
  // Why a copy found under the name was not used and was replaced (damaged,
  // incomplete, of another format version…); empty when none was found or
  // it was used. For the rank's log.
  const std::string& replaced() const;

 private:
  struct Impl;
  explicit SharedDataset(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// In a trial process: the copy behind `fd`, mapped read-only with every
// page resident (so that it is in the process's memory before its baseline),
// its header checked. Throws DatasetError naming `fd` and what is wrong.
class MappedDataset {
 public:
  explicit MappedDataset(int fd);
  MappedDataset(MappedDataset&&) noexcept;
  MappedDataset& operator=(MappedDataset&&) noexcept;
  ~MappedDataset();

  const DatasetView& view() const;
  std::size_t mapped_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memsweep
