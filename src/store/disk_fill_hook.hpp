#pragma once
// A fault the tests inject into the writer: the disk filling up at the
// moment a given direct chunk write of /samples runs, which a real fill
// reaches in about 1 of 12 runs only (issue 43). One environment variable,
// read once when a writer opens its file:
//
//   MEMSWEEP_TEST_STORE_HOOK="fill_disk_before_chunk=N"
//
// Before its Nth direct chunk write (1 for the first), the writer fills the
// filesystem that holds the results file: a file .memsweep-test-fill beside
// it, written until the disk refuses more. The chunk write then meets a
// real full disk. Only a small filesystem (a test's tmpfs) is filled.

#include "store/hdf5_handles.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

namespace memsweep::store {

inline constexpr std::string_view kStoreHookEnvVar = "MEMSWEEP_TEST_STORE_HOOK";
inline constexpr std::string_view kDiskFillFile = ".memsweep-test-fill";
// A filesystem with more room than this is not filled (the hook fails):
// a hook left set by mistake must not fill a real disk.
inline constexpr std::uint64_t kMaxDiskFillBytes = std::uint64_t{64} << 20;

struct StoreHook {
  std::uint64_t fill_disk_before_chunk = 0;  // 0: never
};

// The hook `spec` (the variable's value) asks for; throws StoreError
// naming the variable for a malformed one, so that a typo in a test fails
// it rather than testing nothing.
StoreHook parse_store_hook(std::string_view spec, const Hdf5Errors& errors);
// From the environment; no hook when the variable is unset or empty.
StoreHook store_hook_from_environment(const Hdf5Errors& errors);

// Fills the filesystem of `file` (see above); throws StoreError when it has
// more than kMaxDiskFillBytes free or the fill file cannot be made.
void fill_disk_beside(const std::filesystem::path& file, const Hdf5Errors& errors);

// Moves the open file's end of allocation kSkippedBytes past its end, so
// that the next block HDF5 writes starts in a page the full disk no longer
// has. Without it a chunk that compresses well fits in the slack of the
// file's last page and is written, and the fill lands in the next flush
// instead (a CI run saw it). The gap is a hole, and reads as zeros.
inline constexpr std::uint64_t kSkippedBytes = std::uint64_t{64} << 10;
void allocate_past_last_page(hid_t file, const Hdf5Errors& errors);

}  // namespace memsweep::store
