#include "memsweep/dataset_preflight.hpp"

#include "dataset/cifar.hpp"
#include "dataset/gzip_file.hpp"
#include "dataset/idx.hpp"
#include "dataset/labels.hpp"
#include "dataset/locate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <system_error>
#include <utility>

namespace memsweep {
namespace {

namespace fs = std::filesystem;
using namespace dataset::detail;

std::string records_text(const std::optional<std::size_t>& records) {
  return records ? std::to_string(*records) : std::string("?");
}

// What a raw (uncompressed) file's size must be. A gzip file's data are
// checked by the full load only: its size is known once it is decompressed.
void check_raw_size(const fs::path& path, std::uint64_t expected, std::string_view what) {
  if (is_gzip_file(path)) return;
  std::error_code error;
  const std::uintmax_t size = fs::file_size(path, error);
  if (error) throw DatasetError(fmt::format("cannot read {}: {}", path.string(), error.message()));
  if (size < expected)
    throw DatasetError(fmt::format("{}: truncated: its header announces {} ({} bytes in all), found {} bytes",
                                   path.string(), what, expected, size));
  if (size > expected)
    throw DatasetError(
        fmt::format("{}: its header announces {} ({} bytes in all), found {} bytes: {} unexpected "
                    "bytes after the data",
                    path.string(), what, expected, size, size - expected));
}

// One IDX split's headers, checked as make_idx_split would check the data.
std::size_t check_idx_split(const fs::path& images_path, const fs::path& labels_path, ImageShape shape) {
  const IdxHeader images =
      parse_idx_images_header(read_file_head(images_path, kIdxImagesHeaderBytes), images_path.string());
  const IdxHeader labels =
      parse_idx_labels_header(read_file_head(labels_path, kIdxLabelsHeaderBytes), labels_path.string());
  if (images.rows != static_cast<std::size_t>(shape.height) || images.columns != static_cast<std::size_t>(shape.width))
    throw DatasetError(fmt::format("{}: images are {}x{}, expected {}x{}", images_path.string(), images.rows,
                                   images.columns, shape.height, shape.width));
  if (images.count == 0) throw DatasetError(fmt::format("{} holds no images", images_path.string()));
  if (images.count != labels.count)
    throw DatasetError(fmt::format("{} holds {} images but {} holds {} labels: they must match one to one",
                                   images_path.string(), images.count, labels_path.string(), labels.count));
  check_raw_size(images_path, images.file_bytes,
                 fmt::format("{} images of {}x{}", images.count, images.rows, images.columns));
  check_raw_size(labels_path, labels.file_bytes, fmt::format("{} labels", labels.count));
  return images.count;
}

void check_idx(DatasetReport& report, const std::vector<fs::path>& search_dirs) {
  const IdxFileSet files = locate_idx_files(report.kind, search_dirs);
  report.folder = files.train_images.parent_path();
  report.shape = input_shape(DatasetSpec{report.kind, {}});
  report.train_records = check_idx_split(files.train_images, files.train_labels, report.shape);
  report.test_records = check_idx_split(files.test_images, files.test_labels, report.shape);
  report.files = {files.train_images, files.train_labels, files.test_images, files.test_labels};
}

// A batch's record count from its size (a raw file's, or what a gzip
// trailer records), and its first record's label: enough to tell a CIFAR-10
// batch from another file without reading it.
std::optional<std::size_t> check_cifar_batch(const fs::path& path) {
  const std::vector<std::uint8_t> first = read_file_head(path, kCifarRecordBytes);
  if (first.empty()) throw DatasetError(fmt::format("{}: empty file, expected CIFAR-10 records", path.string()));
  check_label(first.front(), 0, kCifarClasses, path.string(), "record");
  if (is_gzip_file(path)) {
    // The trailer is a hint (of the last member only): an odd one leaves the
    // count to the full load rather than refusing a file that may be right.
    const std::optional<std::uint64_t> size = gzip_recorded_size(path);
    if (!size || *size == 0 || *size % kCifarRecordBytes != 0) return std::nullopt;
    return static_cast<std::size_t>(*size / kCifarRecordBytes);
  }
  std::error_code error;
  const std::uintmax_t size = fs::file_size(path, error);
  if (error) throw DatasetError(fmt::format("cannot read {}: {}", path.string(), error.message()));
  if (size % kCifarRecordBytes != 0)
    throw DatasetError(fmt::format(
        "{}: {} bytes is not a whole number of CIFAR-10 records ({} bytes each: {} label + {} pixels): {}, then {} "
        "bytes left over (truncated, or not a CIFAR-10 binary batch?)",
        path.string(), size, kCifarRecordBytes, kCifarLabelBytes, kCifarImageBytes,
        record_count(size / kCifarRecordBytes), size % kCifarRecordBytes));
  return static_cast<std::size_t>(size / kCifarRecordBytes);
}

void check_cifar(DatasetReport& report, const std::vector<fs::path>& search_dirs) {
  const CifarFileSet files = locate_cifar_files(search_dirs);
  report.folder = files.test_batch.parent_path();
  report.shape = kCifarShape;
  std::optional<std::size_t> train = 0;
  for (const fs::path& batch : files.train_batches) {
    const std::optional<std::size_t> records = check_cifar_batch(batch);
    train = train && records ? std::optional<std::size_t>(*train + *records) : std::nullopt;
  }
  report.train_records = train;
  report.test_records = check_cifar_batch(files.test_batch);
  report.files = files.train_batches;
  report.files.push_back(files.test_batch);
}

// "needs A, B, C and D (each raw or .gz) in one folder; looked in X: no such
// folder; Y: missing B[.gz]": what locate's message says, on one line.
std::string missing_text(DatasetKind kind, const std::vector<fs::path>& search_dirs) {
  const FolderSearch search = search_dataset_folders(kind, search_dirs);
  std::vector<std::string> places;
  for (const FolderLook& look : search.looked)
    places.push_back(fmt::format("{}: {}", look.folder.string(), look.lacked));
  if (places.empty()) places.emplace_back("nowhere (the search list is empty)");
  return fmt::format("not found: needs {} (each raw or {}) in one folder; looked in {}",
                     fmt::join(required_file_names(kind), ", "), kGzipSuffix, fmt::join(places, "; "));
}

}  // namespace

bool reads_dataset_files(const TrialSpec& trial) {
  return trial.dataset.kind != DatasetKind::synthetic && (!trial.program || trial.program->uses_data_dir);
}

std::vector<DatasetKind> datasets_needed(const std::vector<TrialSpec>& trials) {
  std::vector<DatasetKind> kinds;
  for (const TrialSpec& trial : trials) {
    const DatasetKind kind = trial.dataset.kind;
    if (reads_dataset_files(trial) && std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  }
  return kinds;
}

DatasetReport check_dataset(DatasetKind kind, const std::vector<fs::path>& search_dirs) {
  DatasetReport report;
  report.kind = kind;
  try {
    if (kind == DatasetKind::cifar10)
      check_cifar(report, search_dirs);
    else
      check_idx(report, search_dirs);
    report.state = DatasetReport::State::found;
  } catch (const DatasetNotFoundError&) {
    report.state = DatasetReport::State::missing;
    report.problem = missing_text(kind, search_dirs);
  } catch (const DatasetError& error) {
    report.state = DatasetReport::State::malformed;
    report.problem = error.what();
    report.files.clear();
  }
  return report;
}

std::vector<DatasetReport> check_datasets(const std::vector<TrialSpec>& trials,
                                          const std::vector<fs::path>& search_dirs) {
  std::vector<DatasetReport> reports;
  for (const DatasetKind kind : datasets_needed(trials)) {
    DatasetReport report = check_dataset(kind, search_dirs);
    // Only programs that name {data_dir} need it: say which, for the file's place.
    const auto reader = std::find_if(trials.begin(), trials.end(), [&](const TrialSpec& t) {
      return t.dataset.kind == kind && reads_dataset_files(t);
    });
    if (!report.found() && reader->program)
      report.problem +=
          fmt::format("; needed by {} (its command, env or workdir uses {{data_dir}})", reader->program->place);
    reports.push_back(std::move(report));
  }
  return reports;
}

std::string report_line(const DatasetReport& report) {
  const std::string_view name = dataset_name(report.kind);
  if (!report.found()) return fmt::format("{}: {}", name, report.problem);
  return fmt::format("{}: found in {}: {} train, {} test, {}x{}x{}", name, report.folder.string(),
                     records_text(report.train_records), records_text(report.test_records), report.shape.channels,
                     report.shape.height, report.shape.width);
}

void require_datasets(const std::vector<DatasetReport>& reports) {
  std::vector<std::string> lines;
  std::vector<std::string> missing_folders;
  for (const DatasetReport& report : reports) {
    if (report.found()) continue;
    lines.push_back(report_line(report));
    if (report.state == DatasetReport::State::missing)
      missing_folders.push_back(fmt::format("{}/", dataset_subfolders(report.kind).front()));
  }
  if (lines.empty()) return;
  if (!missing_folders.empty())
    lines.push_back(
        fmt::format("Pass --data-dir DIR or set {} to a folder holding {} (ci/fetch-datasets.sh DIR "
                    "downloads the datasets).",
                    kDataDirEnvVar, fmt::join(missing_folders, ", ")));
  throw InputError(fmt::format("{}", fmt::join(lines, "\n")));
}

}  // namespace memsweep
