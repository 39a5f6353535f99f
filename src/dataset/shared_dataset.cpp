// One decoded copy of a dataset per node (shared_dataset.hpp).
//
// Files in the shared folder, for a dataset NAME and a key KEY:
// - memsweep-NAME-KEY.dataset: the copy (shared_dataset_file.hpp), mode 0444.
//   It appears under this name only complete: it is written as an unnamed
//   file (O_TMPFILE) and linked into place at the end.
// - memsweep-NAME-KEY.lock: an empty file whose exclusive flock() is held by
//   the one process that checks, replaces or creates the copy; the others
//   wait on it. A process killed there drops the lock with its descriptors.
//
// Every process that uses the copy (a rank, through SharedDataset) holds a
// shared flock() on it for as long as it does; the last one to let go
// removes both files. A run that crashed leaves them behind: a later run
// with the same key finds the copy, checks it, uses it and removes it at
// its end. A lock file may also stay after an open that failed (a full
// folder, a missing dataset): an empty file, harmless, reused by the next
// open with that key.

#include "memsweep/shared_dataset.hpp"

#include "dataset/locate.hpp"
#include "dataset/posix_file.hpp"
#include "dataset/shared_dataset_file.hpp"
#include "memsweep/random.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

namespace memsweep {
namespace {

namespace fs = std::filesystem;
using dataset::detail::errno_text;
using dataset::detail::lock_file;
using dataset::detail::names_open_file;
using dataset::detail::SharedFileHeader;

constexpr mode_t kCopyMode = 0444;  // nobody writes a copy once it has its name
constexpr mode_t kLockFileMode = 0644;

[[noreturn]] void fail_in_folder(const fs::path& dir, std::string_view what, int error) {
  throw SharedDatasetError(
      fmt::format("shared dataset folder {}: cannot {}: {}. The folder must exist, be writable by every process of the "
                  "node and have room for the decoded dataset (a memory filesystem such as {}); set {} to use another.",
                  dir.string(), what, errno_text(error), kDefaultSharedDir, kSharedDirEnvVar));
}

void check_folder(const fs::path& dir) {
  struct stat status {};
  if (::stat(dir.c_str(), &status) != 0) fail_in_folder(dir, "use it", errno);
  if (!S_ISDIR(status.st_mode)) fail_in_folder(dir, "use it", ENOTDIR);
}

std::string file_name(std::string_view name, std::string_view key, std::string_view suffix) {
  return fmt::format("memsweep-{}-{}{}", name, key, suffix);
}

// ---- the key --------------------------------------------------------------

std::int64_t mtime_nanoseconds(const struct stat& status) {
  constexpr std::int64_t kNanosecondsPerSecond = 1'000'000'000;
  return static_cast<std::int64_t>(status.st_mtim.tv_sec) * kNanosecondsPerSecond + status.st_mtim.tv_nsec;
}

void describe_source_file(std::string& text, const fs::path& path) {
  const fs::path absolute = fs::absolute(path).lexically_normal();
  struct stat status {};
  if (::stat(absolute.c_str(), &status) != 0)
    throw DatasetError(fmt::format("{}: cannot read its size and time: {}", absolute.string(), errno_text(errno)));
  text += fmt::format("file {} size {} mtime_ns {} inode {}\n", absolute.string(), status.st_size,
                      mtime_nanoseconds(status), status.st_ino);
}

// ---- the exclusive lock ---------------------------------------------------

UniqueFd open_or_create_lock_file(const fs::path& lock_path, const fs::path& dir) {
  // Opened without O_CREAT first: with fs.protected_regular, O_CREAT on
  // another user's existing file in a sticky folder such as /dev/shm fails.
  for (;;) {
    UniqueFd fd(::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd) return fd;
    if (errno != ENOENT)
      fail_in_folder(dir, fmt::format("open the lock file {}", lock_path.filename().string()), errno);
    fd = UniqueFd(::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC | O_CREAT | O_EXCL, kLockFileMode));
    if (fd) return fd;
    if (errno != EEXIST)
      fail_in_folder(dir, fmt::format("create the lock file {}", lock_path.filename().string()), errno);
  }
}

// The lock file's descriptor, its exclusive lock held, on the file that its
// name refers to. The last holder of a copy removes the lock file; a process
// that opened it just before that then holds a lock nobody else will take,
// so it tries again on the file under the name.
UniqueFd lock_exclusively(const fs::path& lock_path, const fs::path& dir) {
  for (;;) {
    UniqueFd fd = open_or_create_lock_file(lock_path, dir);
    if (const int error = lock_file(fd.get(), LOCK_EX))
      fail_in_folder(dir, fmt::format("lock {}", lock_path.filename().string()), error);
    if (names_open_file(lock_path, fd.get())) return fd;
  }
}

// ---- a copy found under the name ------------------------------------------

struct Copy {
  UniqueFd fd;  // read-only, close-on-exec, with a shared flock held
  SharedFileHeader header;
};

// What makes the copy open as `fd` unusable for `key` ("" when nothing).
std::string copy_problem(int fd, std::string_view key, bool verify_checksum, SharedFileHeader& header) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) return fmt::format("cannot fstat it: {}", errno_text(errno));
  if (!S_ISREG(status.st_mode)) return "not a regular file";
  const auto file_bytes = static_cast<std::uint64_t>(status.st_size);
  if (file_bytes < sizeof(SharedFileHeader))
    return fmt::format("{} bytes, shorter than the header ({} bytes)", file_bytes, sizeof(SharedFileHeader));
  if (const int error = dataset::detail::read_exact(fd, std::as_writable_bytes(std::span(&header, 1)), 0))
    return fmt::format("cannot read its header: {}", error > 0 ? errno_text(error) : "end of file");
  if (std::string problem = dataset::detail::shared_header_problem(header, file_bytes); !problem.empty())
    return problem;
  if (std::string_view(header.key.data(), header.key.size()) != key)
    return fmt::format("its header holds key {} (the file was renamed or copied)",
                       std::string_view(header.key.data(), header.key.size()));
  if (!verify_checksum) return {};
  const dataset::detail::ReadOnlyMapping mapping(fd, file_bytes, /*populate=*/true);
  if (mapping.failed() != 0) return fmt::format("cannot map it to check it: {}", errno_text(mapping.failed()));
  const std::uint64_t checksum =
      dataset::detail::shared_checksum(header, dataset::detail::shared_view(header, mapping.bytes()));
  if (checksum != header.checksum)
    return fmt::format("its data do not match its checksum ({:08x}, the header says {:08x})", checksum,
                       header.checksum);
  return {};
}

// The copy under `path` if there is one and it is sound. One that is not is
// removed from the name (`replaced` says why), so that a new one takes its
// place. Called with the lock file held.
std::optional<Copy> find_copy(const fs::path& path, std::string_view key, const fs::path& dir, std::string& replaced) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    if (errno == ENOENT) return std::nullopt;
    fail_in_folder(dir, fmt::format("open {}", path.filename().string()), errno);
  }
  // The checksum is checked when the copy gains its first holder: by its
  // writer, or here when nobody holds it (a copy left by an earlier run or a
  // crash). A copy that others hold was checked by the first of them and is
  // read-only since. Checking it again for every rank of a node costs about
  // 90 ms each for MNIST (map, then CRC-32 of 210 MiB), one rank after the
  // other under the lock file: 6 s for 64 ranks, against 0.1 ms for the
  // header alone.
  const bool held_elsewhere = ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0;
  // From exclusive to shared is not atomic, which is harmless here: new
  // holders only come through the lock file, which this process holds.
  if (const int error = lock_file(fd.get(), LOCK_SH))
    fail_in_folder(dir, fmt::format("lock {}", path.filename().string()), error);
  // Its last holder may have removed it between our open() and our lock.
  if (!names_open_file(path, fd.get())) return std::nullopt;
  Copy copy;
  replaced = copy_problem(fd.get(), key, !held_elsewhere, copy.header);
  if (replaced.empty()) {
    copy.fd = std::move(fd);
    return copy;
  }
  // Still the same file (checked above, and nobody else renames under the lock).
  if (::unlink(path.c_str()) != 0)
    fail_in_folder(dir, fmt::format("remove the unusable {} ({})", path.filename().string(), replaced), errno);
  return std::nullopt;
}

// ---- a new copy -----------------------------------------------------------

// Where a new copy is written before it gets its name: an unnamed file, or
// on a filesystem without O_TMPFILE a named temporary file (which a process
// killed while writing leaves behind, under a name no run reads).
struct NewFile {
  UniqueFd fd;
  fs::path temporary_path;  // empty for an unnamed file

  NewFile() = default;
  NewFile(NewFile&&) = default;
  NewFile& operator=(NewFile&&) = default;
  ~NewFile() {
    if (!temporary_path.empty()) ::unlink(temporary_path.c_str());
  }
};

NewFile create_new_file(const fs::path& dir, const fs::path& path) {
  NewFile file;
  file.fd = UniqueFd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, kCopyMode));
  if (file.fd) return file;
  // EOPNOTSUPP: the filesystem has no O_TMPFILE; EISDIR: the kernel has none.
  if (errno != EOPNOTSUPP && errno != EISDIR) fail_in_folder(dir, "create a file in it", errno);
  file.temporary_path = path;
  file.temporary_path += fmt::format(".tmp-{}", ::getpid());
  // A leftover of a killed process that had our pid: we hold the lock, so nobody writes it.
  ::unlink(file.temporary_path.c_str());
  file.fd = UniqueFd(::open(file.temporary_path.c_str(), O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, kCopyMode));
  if (!file.fd) {
    const int error = errno;
    const std::string temporary_name = file.temporary_path.filename().string();
    file.temporary_path.clear();  // not ours to remove
    fail_in_folder(dir, fmt::format("create the temporary file {}", temporary_name), error);
  }
  return file;
}

SplitView limited(const SplitView& split, std::size_t max_examples) {
  return max_examples == 0 ? split : split.head(max_examples);
}

// Writes the dataset's arrays, then the header, then the completion mark.
void write_copy(int fd, const SharedFileHeader& header, const DatasetView& view, const fs::path& dir) {
  const auto write_or_fail = [&](std::span<const std::byte> bytes, std::uint64_t offset) {
    if (const int error = dataset::detail::write_all(fd, bytes, offset))
      fail_in_folder(dir, fmt::format("write the {} dataset ({} bytes)", view.name, header.file_bytes), error);
  };
  const std::pair<const SplitView*, const dataset::detail::SharedSplitRecord*> splits[] = {{&view.train, &header.train},
                                                                                           {&view.test, &header.test}};
  for (const auto& [split, record] : splits) {
    write_or_fail(std::as_bytes(split->images), record->images_offset);
    write_or_fail(std::as_bytes(split->labels), record->labels_offset);
  }
  SharedFileHeader unfinished = header;
  unfinished.complete_mark = 0;
  write_or_fail(std::as_bytes(std::span(&unfinished, 1)), 0);
  const std::uint64_t mark = dataset::detail::kSharedCompleteMark;
  write_or_fail(std::as_bytes(std::span(&mark, 1)), offsetof(SharedFileHeader, complete_mark));
}

// Decodes the dataset, writes it and gives it its name. Called with the lock
// file held.
Copy create_copy(const SharedDatasetRequest& request, std::string_view key, const fs::path& dir, const fs::path& path) {
  NewFile file;
  Copy copy;
  {
    // The decoded dataset lives only in this block: the process that
    // decodes must not keep a private copy next to the shared one.
    const Dataset dataset = load_dataset(request.spec, request.search_dirs);
    if (shared_dataset_key(request) != key) {
      std::vector<std::string> files;
      for (const fs::path& source : dataset.files) files.push_back(source.string());
      throw DatasetError(
          fmt::format("{}: changed while being read (size, time or inode); try again", fmt::join(files, ", ")));
    }
    DatasetView view = view_of(dataset);
    view.train = limited(view.train, request.max_train_examples);
    view.test = limited(view.test, request.max_test_examples);
    copy.header = dataset::detail::make_shared_header(view, key, static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)));
    copy.header.checksum = dataset::detail::shared_checksum(copy.header, view);
    copy.header.complete_mark = dataset::detail::kSharedCompleteMark;
    file = create_new_file(dir, path);
    write_copy(file.fd.get(), copy.header, view, dir);
  }
  // What the process keeps and passes on is read-only: a new open file
  // description of the same file, locked before the file has its name, so
  // that the copy never stands under it without a holder.
  const std::string self_link = fmt::format("/proc/self/fd/{}", file.fd.get());
  copy.fd = UniqueFd(::open(self_link.c_str(), O_RDONLY | O_CLOEXEC));
  if (!copy.fd) fail_in_folder(dir, fmt::format("reopen the new copy read-only through {}", self_link), errno);
  if (const int error = lock_file(copy.fd.get(), LOCK_SH))
    fail_in_folder(dir, fmt::format("lock the new copy {}", path.filename().string()), error);
  if (file.temporary_path.empty()) {
    if (::linkat(AT_FDCWD, self_link.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) != 0)
      fail_in_folder(dir, fmt::format("give the new copy its name {}", path.filename().string()), errno);
  } else {
    if (::rename(file.temporary_path.c_str(), path.c_str()) != 0)
      fail_in_folder(dir,
                     fmt::format("rename {} to {}", file.temporary_path.filename().string(), path.filename().string()),
                     errno);
    file.temporary_path.clear();
  }
  return copy;
}

}  // namespace

fs::path shared_dataset_dir_from_environment() {
  const char* value = std::getenv(std::string(kSharedDirEnvVar).c_str());
  if (value != nullptr && *value != '\0') return value;
  return fs::path(kDefaultSharedDir);
}

std::string shared_dataset_key(const SharedDatasetRequest& request) {
  const DatasetSpec& spec = request.spec;
  std::string text = fmt::format("memsweep shared dataset, format {}\ndataset {}\nmax_train {}\nmax_test {}\n",
                                 dataset::detail::kSharedFormatVersion, dataset_name(spec.kind),
                                 request.max_train_examples, request.max_test_examples);
  switch (spec.kind) {
    case DatasetKind::synthetic: {
      const SyntheticSpec& synthetic = spec.synthetic;
      // The noise as its exact value (hexadecimal float), not a rounded decimal.
      text += fmt::format("shape {}x{}x{} classes {} train {} test {} noise {:a} seed {}\n", synthetic.shape.channels,
                          synthetic.shape.height, synthetic.shape.width, synthetic.classes, synthetic.train_size,
                          synthetic.test_size, synthetic.noise, synthetic.seed);
      break;
    }
    case DatasetKind::mnist:
    case DatasetKind::fashion_mnist: {
      const auto files = dataset::detail::locate_idx_files(spec.kind, request.search_dirs);
      for (const fs::path* file : {&files.train_images, &files.train_labels, &files.test_images, &files.test_labels})
        describe_source_file(text, *file);
      break;
    }
    case DatasetKind::cifar10: {
      const auto files = dataset::detail::locate_cifar_files(request.search_dirs);
      for (const fs::path& file : files.train_batches) describe_source_file(text, file);
      describe_source_file(text, files.test_batch);
      break;
    }
  }
  return fmt::format("{:016x}", stable_hash(text));
}

// ---- SharedDataset ----------------------------------------------------------

struct SharedDataset::Impl {
  UniqueFd fd;
  fs::path path;
  fs::path lock_path;
  std::string name;
  DatasetSpec spec;
  std::size_t train_examples = 0;
  std::size_t test_examples = 0;
  std::uint64_t file_bytes = 0;
  bool decoded_here = false;
  double open_seconds = 0.0;
  std::string replaced;

  ~Impl() { release(); }

  // Converting our shared lock to an exclusive one succeeds only when no
  // other process holds the copy (a trial process's descriptor is a dup of
  // ours, the same lock). Then the copy is removed, unless a process is
  // opening it at this moment (it holds the lock file): that one uses it.
  void release() noexcept {
    if (!fd) return;
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) remove_unused_copy();
    fd.reset();
  }

  void remove_unused_copy() noexcept {
    // No lock file: someone removed it by hand; leave the copy to the next
    // run, which reuses it and removes it at its end.
    const UniqueFd lock(::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!lock || ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0 || !names_open_file(lock_path, lock.get())) return;
    // Only our copy, and its lock file with it: if ours was replaced, the
    // name refers to a newer copy, whose last holder removes both.
    if (!names_open_file(path, fd.get())) return;
    ::unlink(path.c_str());
    ::unlink(lock_path.c_str());
  }
};

SharedDataset SharedDataset::open(const SharedDatasetRequest& request, const fs::path& dir) {
  const auto start = std::chrono::steady_clock::now();
  auto impl = std::make_unique<Impl>();
  impl->name = std::string(dataset_name(request.spec.kind));
  impl->spec = request.spec;
  const std::string key = shared_dataset_key(request);
  check_folder(dir);
  impl->path = dir / file_name(impl->name, key, ".dataset");
  impl->lock_path = dir / file_name(impl->name, key, ".lock");

  // Released when this function returns, whatever happens in between.
  const UniqueFd lock = lock_exclusively(impl->lock_path, dir);
  std::optional<Copy> copy = find_copy(impl->path, key, dir, impl->replaced);
  if (!copy) {
    copy = create_copy(request, key, dir, impl->path);
    impl->decoded_here = true;
  }
  impl->fd = std::move(copy->fd);
  impl->train_examples = copy->header.train.examples;
  impl->test_examples = copy->header.test.examples;
  impl->file_bytes = copy->header.file_bytes;
  impl->open_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return SharedDataset(std::move(impl));
}

SharedDataset::SharedDataset(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SharedDataset::SharedDataset(SharedDataset&&) noexcept = default;
SharedDataset& SharedDataset::operator=(SharedDataset&&) noexcept = default;
SharedDataset::~SharedDataset() = default;

int SharedDataset::fd() const { return impl_->fd.get(); }
const fs::path& SharedDataset::path() const { return impl_->path; }
const std::string& SharedDataset::name() const { return impl_->name; }
const DatasetSpec& SharedDataset::spec() const { return impl_->spec; }
std::size_t SharedDataset::train_examples() const { return impl_->train_examples; }
std::size_t SharedDataset::test_examples() const { return impl_->test_examples; }
std::uint64_t SharedDataset::file_bytes() const { return impl_->file_bytes; }
bool SharedDataset::decoded_here() const { return impl_->decoded_here; }
double SharedDataset::open_seconds() const { return impl_->open_seconds; }
const std::string& SharedDataset::replaced() const { return impl_->replaced; }

// ---- MappedDataset ----------------------------------------------------------

struct MappedDataset::Impl {
  dataset::detail::ReadOnlyMapping mapping;
  DatasetView view;
};

MappedDataset::MappedDataset(int fd) : impl_(std::make_unique<Impl>()) {
  const std::string target = dataset::detail::descriptor_target(fd);
  const std::string described =
      target.empty() ? fmt::format("descriptor {}", fd) : fmt::format("descriptor {} ({})", fd, target);
  const auto fail = [&](std::string_view what) {
    throw DatasetError(fmt::format("shared dataset {}: {}", described, what));
  };
  struct stat status {};
  if (::fstat(fd, &status) != 0) fail(fmt::format("cannot fstat it: {}", errno_text(errno)));
  if (!S_ISREG(status.st_mode)) fail("not a regular file, so not a shared dataset");
  const auto file_bytes = static_cast<std::uint64_t>(status.st_size);
  if (file_bytes < sizeof(SharedFileHeader))
    fail(fmt::format("{} bytes, shorter than a shared dataset's header ({} bytes)", file_bytes,
                     sizeof(SharedFileHeader)));
  // Populated now, so that the pages are in this process (its RssShmem)
  // before the trial's baseline is taken, not faulted in during training.
  impl_->mapping = dataset::detail::ReadOnlyMapping(fd, file_bytes, /*populate=*/true);
  if (impl_->mapping.failed() != 0) fail(fmt::format("cannot map it: {}", errno_text(impl_->mapping.failed())));
  SharedFileHeader header;
  std::memcpy(&header, impl_->mapping.bytes().data(), sizeof(header));
  // Not the checksum: the rank checked it (or wrote it) before passing the
  // descriptor on, and the copy is read-only since; recomputing it would add
  // about 70 ms for MNIST (CRC-32 of 210 MiB) to every trial's start.
  if (std::string problem = dataset::detail::shared_header_problem(header, file_bytes); !problem.empty()) fail(problem);
  impl_->view = dataset::detail::shared_view(header, impl_->mapping.bytes());
}

MappedDataset::MappedDataset(MappedDataset&&) noexcept = default;
MappedDataset& MappedDataset::operator=(MappedDataset&&) noexcept = default;
MappedDataset::~MappedDataset() = default;

const DatasetView& MappedDataset::view() const { return impl_->view; }
std::size_t MappedDataset::mapped_bytes() const { return impl_->mapping.bytes().size(); }

}  // namespace memsweep
