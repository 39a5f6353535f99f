#include "store/file_access.hpp"

#include "common/file_kind.hpp"
#include "store/writer_lock.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <system_error>

namespace memsweep::store {
namespace {

// A private property of HDF5 1.10's file access class (H5Fprivate.h's
// H5F_ACS_CLEAR_STATUS_FLAGS_NAME), registered in every file access list;
// h5clear -s sets it to open a file whose writer died. With it, H5Fopen
// zeroes the superblock's status flags before checking them, and a
// read-write open then writes the cleared flags back.
constexpr char kClearStatusFlagsProperty[] = "clear_status_flags";

// Fragments of HDF5's messages that tell the failures apart.
constexpr std::string_view kLockFailure = "unable to lock file";
constexpr std::string_view kTruncated = "truncated file";
// HDF5 shares one open file within a process, and refuses a second open in
// another mode ("file is already open for read-only"). The superblock's
// "already open for write" flag is cleared before every open that reports.
constexpr std::string_view kOpenInThisProcess = "already open";
// The same, when the two opens differ in taking HDF5's lock (readers take none).
constexpr std::string_view kOpenInThisProcessLocking = "file locking flag values don't match";

// A SWMR reader may read metadata while the writer is rewriting it, so a
// checksum that fails is read again. HDF5 1.10 sleeps 1 ns before the second
// attempt and twice as long before each next one, with no cap, and a SWMR
// reader makes 100 attempts by default: a damaged file would keep a reader
// waiting for centuries. 25 attempts wait at most 2^25 ns = 34 ms in all,
// far longer than a writer takes to write a few kilobytes of metadata.
constexpr unsigned kSwmrMetadataReadAttempts = 25;

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

// Checks what can be told without HDF5: the file exists, is a file, and
// starts with HDF5's signature.
void check_is_hdf5(const std::filesystem::path& path, const Hdf5Errors& errors) {
  // A link that loops or leads nowhere is said as such, not as a missing file.
  if (const std::optional<UnfollowablePath> bad = unfollowable_path(path)) errors.fail_plain(bad->why);
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) errors.fail_plain("no such file");
  if (error) errors.fail_plain(fmt::format("cannot read it: {}", error.message()));
  if (status.type() == std::filesystem::file_type::directory)
    errors.fail_plain("is a directory; expected a results file (HDF5)");
  if (status.type() != std::filesystem::file_type::regular) errors.fail_plain("not a regular file");
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 < 0) errors.fail("read its first bytes");
  if (is_hdf5 == 0) errors.fail_plain("not an HDF5 file (no HDF5 signature)");
}

[[noreturn]] void fail_to_open(const std::string& cause, const Hdf5Errors& errors, bool writer) {
  if (contains(cause, kLockFailure)) {
    errors.fail_plain(
        writer ? fmt::format("another process is writing this file (HDF5 could not lock it: {}); "
                             "wait for that process to end, or write to another file",
                             cause)
               : fmt::format("another process is writing it without SWMR, which locks the file "
                             "(HDF5: {}); it can be read once that run ends, or while a run writes with SWMR",
                             cause));
  }
  if (contains(cause, kTruncated)) errors.fail_plain(fmt::format("the file is truncated (HDF5: {})", cause));
  if (contains(cause, kOpenInThisProcess) || contains(cause, kOpenInThisProcessLocking))
    errors.fail_plain(fmt::format("this process already has the file open in another mode (HDF5: {})", cause));
  errors.fail_plain(fmt::format("the file is damaged: HDF5 cannot open it ({})",
                                cause.empty() ? "no reason given" : readable_cause(cause)));
}

// Readers take no HDF5 lock: a shared lock held while `memsweep watch` or
// `summary` has the file open would make a resume's exclusive one fail
// ("unable to lock file"), so a watcher would break the requeue of the job
// it watches. A writer without SWMR is told apart by its lock instead
// (open_file_for_reading).
void without_file_locking(hid_t fapl, const Hdf5Errors& errors) {
  errors.check(H5Pset_file_locking(fapl, false, true), "open without taking HDF5's file lock");
}

PropertyHandle swmr_read_properties(const Hdf5Errors& errors) {
  PropertyHandle fapl(errors.check(H5Pcreate(H5P_FILE_ACCESS), "create file access properties"));
  errors.check(H5Pset_metadata_read_attempts(fapl.get(), kSwmrMetadataReadAttempts),
               "set the metadata read attempts of a SWMR reader");
  without_file_locking(fapl.get(), errors);
  return fapl;
}

}  // namespace

PropertyHandle file_access_properties(bool for_writing, bool clear_status_flags, const Hdf5Errors& errors) {
  PropertyHandle fapl(errors.check(H5Pcreate(H5P_FILE_ACCESS), "create file access properties"));
  if (for_writing)
    errors.check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST),
                 "ask for the latest file format (needed for SWMR)");
  if (clear_status_flags) {
    hbool_t clear = true;
    errors.check(H5Pset(fapl.get(), kClearStatusFlagsProperty, &clear),
                 "ask HDF5 to clear the file's open-for-writing flag (property clear_status_flags)");
  }
  return fapl;
}

FileHandle create_file(const std::filesystem::path& path, const Hdf5Errors& errors, bool reuse_freed_space) {
  const PropertyHandle fapl = file_access_properties(true, false, errors);
  const PropertyHandle fcpl(errors.check(H5Pcreate(H5P_FILE_CREATE), "create file creation properties"));
  // Without free-space managers and aggregators a freed block is dropped,
  // unless it ends at the end of allocation (fence_end_of_allocation).
  if (!reuse_freed_space)
    errors.check(H5Pset_file_space_strategy(fcpl.get(), H5F_FSPACE_STRATEGY_NONE, false, 1),
                 "ask HDF5 never to reuse freed file space (file space strategy none)");
  return FileHandle(
      errors.check(H5Fcreate(path.c_str(), H5F_ACC_EXCL, fcpl.get(), fapl.get()),
                   fmt::format("create the new file (named {} until it is complete)", path.filename().string())));
}

void address_whole_file(hid_t file, const Hdf5Errors& errors) {
  errors.check(H5Fincrement_filesize(file, 0), "extend the file's end of allocation to its size");
}

void fence_end_of_allocation(hid_t file, const Hdf5Errors& errors) {
  errors.check(H5Fincrement_filesize(file, 1), "leave a byte unallocated after the last chunk written");
}

FileHandle open_file_to_inspect(const std::filesystem::path& path, const Hdf5Errors& errors) {
  check_is_hdf5(path, errors);
  const PropertyHandle fapl = file_access_properties(false, true, errors);
  FileHandle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()));
  if (!file.valid()) fail_to_open(innermost_hdf5_error(), errors, true);
  address_whole_file(file.get(), errors);
  return file;
}

FileHandle open_file_for_writing(const std::filesystem::path& path, const Hdf5Errors& errors) {
  check_is_hdf5(path, errors);
  const PropertyHandle fapl = file_access_properties(true, true, errors);
  FileHandle file(H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get()));
  if (!file.valid()) fail_to_open(innermost_hdf5_error(), errors, true);
  address_whole_file(file.get(), errors);
  return file;
}

OpenedForReading open_file_for_reading(const std::filesystem::path& path, const Hdf5Errors& errors) {
  check_is_hdf5(path, errors);
  // SWMR read access works for a file written with SWMR, live or closed.
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, swmr_read_properties(errors).get());
  if (file >= 0) {
    OpenedForReading opened{FileHandle(file), true};
    address_whole_file(file, errors);
    return opened;
  }
  const std::string swmr_cause = innermost_hdf5_error();
  if (contains(swmr_cause, kLockFailure)) fail_to_open(swmr_cause, errors, false);
  // Otherwise the file was written without SWMR (or by another tool), or a
  // resume has it open before its SWMR writing starts. A live writer holds
  // a lock, HDF5's or memsweep's; a dead one's file is read as it left it.
  if (WriterLock::hdf5_lock_held(path)) fail_to_open(std::string(kLockFailure), errors, false);
  if (WriterLock::is_held(path) == true)
    errors.fail_plain(
        "a memsweep run is opening it to write (a resume, before its SWMR writing starts); read it "
        "again in a moment");
  // If its writer died, the superblock still says "open for writing": the
  // flag is ignored for this read-only open (nothing is written back), and
  // what the writer last flushed is read.
  const PropertyHandle fapl = file_access_properties(false, true, errors);
  without_file_locking(fapl.get(), errors);
  OpenedForReading opened{FileHandle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get())), false};
  if (!opened.file.valid()) fail_to_open(innermost_hdf5_error(), errors, false);
  address_whole_file(opened.file.get(), errors);
  return opened;
}

}  // namespace memsweep::store
