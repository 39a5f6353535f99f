#include "store/table.hpp"

#include "store/attributes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace memsweep::store {
namespace {

// Appends fill the chunk at the end; the cache holds a few of them so that a
// partial chunk is not read back on every append. w0 = 1: chunks already
// written in full leave the cache first.
constexpr std::size_t kCachedChunks = 4;
constexpr std::size_t kMinChunkCacheBytes = 1 << 20;
constexpr std::size_t kChunkCacheSlots = 521;  // a prime, as HDF5 advises for its hash
constexpr double kEvictFullChunksFirst = 1.0;

PropertyHandle access_properties(std::size_t chunk_bytes, const Hdf5Errors& errors) {
  PropertyHandle dapl(errors.check(H5Pcreate(H5P_DATASET_ACCESS), "create dataset access properties"));
  errors.check(H5Pset_chunk_cache(dapl.get(), kChunkCacheSlots,
                                  std::max(kMinChunkCacheBytes, kCachedChunks * chunk_bytes), kEvictFullChunksFirst),
               "set the chunk cache");
  return dapl;
}

hid_t missing_value_type(const Column& column) {
  switch (column.kind) {
    case ColumnKind::int32: return H5T_STD_I32LE;
    case ColumnKind::float64: return H5T_IEEE_F64LE;
    default: return H5T_STD_I64LE;
  }
}

}  // namespace

Table::Table(std::string name, DatasetHandle dataset, TypeHandle memory_type, std::uint64_t chunk_rows,
             const Hdf5Errors& errors)
    : name_(std::move(name)),
      dataset_(std::move(dataset)),
      memory_type_(std::move(memory_type)),
      errors_(errors),
      chunk_rows_(chunk_rows) {
  rows_ = stored_rows();
  flushed_rows_ = rows_;
}

Table Table::create(hid_t file, const TableSchema& schema, const TableStorage& storage, const Hdf5Errors& errors) {
  const std::string where = "/" + schema.name;
  const TypeHandle stored = file_type(schema, errors);
  const hsize_t empty = 0;
  const hsize_t unlimited = H5S_UNLIMITED;
  const SpaceHandle space(errors.check(H5Screate_simple(1, &empty, &unlimited), "create an extendable dataspace"));

  PropertyHandle dcpl(errors.check(H5Pcreate(H5P_DATASET_CREATE), "create dataset creation properties"));
  const hsize_t chunk = storage.chunk_rows;
  errors.check(H5Pset_chunk(dcpl.get(), 1, &chunk), fmt::format("set the chunk size of {}", where));
  if (storage.shuffle) errors.check(H5Pset_shuffle(dcpl.get()), fmt::format("add the shuffle filter to {}", where));
  if (storage.deflate_level > 0)
    errors.check(H5Pset_deflate(dcpl.get(), storage.deflate_level), fmt::format("add deflate to {}", where));
  // Every row is written before it is read: filling new chunks first is waste.
  errors.check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), fmt::format("set the fill time of {}", where));

  const PropertyHandle dapl = access_properties(storage.chunk_rows * H5Tget_size(stored.get()), errors);
  DatasetHandle dataset(errors.check(
      H5Dcreate2(file, schema.name.c_str(), stored.get(), space.get(), H5P_DEFAULT, dcpl.get(), dapl.get()),
      fmt::format("create table {}", where)));
  write_string_attribute(dataset.get(), kDescriptionAttribute, schema.description, errors);
  for (const Column& column : schema.columns) {
    write_string_attribute(dataset.get(), kUnitPrefix + column.name, column.unit, errors);
    write_int_attribute(dataset.get(), kSincePrefix + column.name, column.since_version, H5T_STD_I32LE, errors);
    // In the column's own type, so that a reader compares like with like.
    if (column.minus_one == MinusOne::not_measured)
      write_int_attribute(dataset.get(), kMissingPrefix + column.name, -1, missing_value_type(column), errors);
    if (!column.label.empty()) write_string_attribute(dataset.get(), kLabelPrefix + column.name, column.label, errors);
  }
  return Table(schema.name, std::move(dataset), memory_type(schema, errors), storage.chunk_rows, errors);
}

Table Table::open(hid_t file, const TableSchema& schema, int schema_version, const Hdf5Errors& errors) {
  const std::string where = "/" + schema.name;
  if (errors.check(H5Lexists(file, schema.name.c_str(), H5P_DEFAULT), fmt::format("look for table {}", where)) == 0)
    errors.fail_plain(fmt::format("damaged memsweep results file: table {} is missing", where));
  const std::string attempted = fmt::format("open table {}", where);
  std::size_t chunk_bytes = 0;
  hsize_t chunk_rows = 1;
  std::vector<Column> present;
  std::vector<Column> absent;
  {
    // A first open reads the row type and chunk size: the chunk cache is an
    // access property, set when the dataset is opened for real below.
    const DatasetHandle probe(errors.check(H5Dopen2(file, schema.name.c_str(), H5P_DEFAULT), attempted));
    const TypeHandle stored(errors.check(H5Dget_type(probe.get()), attempted));
    if (H5Tget_class(stored.get()) != H5T_COMPOUND)
      errors.fail_plain(fmt::format("damaged memsweep results file: {} is not a table of compound rows", where));
    // Read by name: the row type holds the schema's columns that the file
    // has (HDF5 matches compound members by name). A column the file's
    // version has, missing, is damage, said so rather than read around; a
    // later version's column is absent, and reads as its default.
    for (const Column& column : schema.columns) {
      if (H5Tget_member_index(stored.get(), column.name.c_str()) >= 0) {
        present.push_back(column);
      } else if (column.since_version <= schema_version) {
        errors.fail_plain(fmt::format("damaged memsweep results file: table {} has no column {}", where, column.name));
      } else {
        absent.push_back(column);
      }
    }
    if (!absent.empty() && schema.default_row.size() != schema.row_size)
      errors.fail_plain(fmt::format("no default row for the columns table {} lacks", where));
    const PropertyHandle dcpl(errors.check(H5Dget_create_plist(probe.get()), attempted));
    if (H5Pget_layout(dcpl.get()) == H5D_CHUNKED && H5Pget_chunk(dcpl.get(), 1, &chunk_rows) == 1)
      chunk_bytes = chunk_rows * H5Tget_size(stored.get());
  }
  const PropertyHandle dapl = access_properties(chunk_bytes, errors);
  DatasetHandle dataset(errors.check(H5Dopen2(file, schema.name.c_str(), dapl.get()), attempted));
  Table table(schema.name, std::move(dataset), memory_type(schema, present, errors), chunk_rows, errors);
  table.row_size_ = schema.row_size;
  if (!absent.empty()) {
    table.absent_ = std::move(absent);
    table.default_row_ = schema.default_row;
  }
  return table;
}

std::uint64_t Table::stored_rows() const {
  const std::string attempted = fmt::format("read the size of table /{}", name_);
  const SpaceHandle space(errors_.check(H5Dget_space(dataset_.get()), attempted));
  hsize_t rows = 0;
  if (H5Sget_simple_extent_dims(space.get(), &rows, nullptr) != 1) errors_.fail(attempted);
  return rows;
}

void Table::append(const void* rows, std::size_t count) {
  if (count == 0) return;
  if (!dataset_.valid()) errors_.fail_plain(fmt::format("cannot append to table /{}: the file is closed", name_));
  if (!absent_.empty())
    errors_.fail_plain(fmt::format("cannot append to table /{}: it lacks column {} (an older schema version)", name_,
                                   absent_.front().name));
  const std::string attempted = fmt::format("append {} rows to table /{}", count, name_);
  const hsize_t start = rows_;
  const hsize_t added = count;
  const hsize_t new_rows = rows_ + count;
  errors_.check(H5Dset_extent(dataset_.get(), &new_rows), attempted);
  const SpaceHandle file_space(errors_.check(H5Dget_space(dataset_.get()), attempted));
  errors_.check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &added, nullptr), attempted);
  const SpaceHandle memory_space(errors_.check(H5Screate_simple(1, &added, nullptr), attempted));
  if (H5Dwrite(dataset_.get(), memory_type_.get(), memory_space.get(), file_space.get(), H5P_DEFAULT, rows) < 0) {
    const std::string cause = innermost_hdf5_error();
    // Rows that were not written must not appear in the table as zeros.
    H5Dset_extent(dataset_.get(), &start);
    fail_to_write(attempted, cause);
  }
  rows_ = new_rows;
}

void Table::append_chunk(std::span<const std::byte> bytes, std::uint32_t filter_mask, std::uint64_t rows) {
  if (!dataset_.valid()) errors_.fail_plain(fmt::format("cannot append to table /{}: the file is closed", name_));
  if (rows != chunk_rows_ || rows_ % chunk_rows_ != 0 || !absent_.empty())
    errors_.fail_plain(fmt::format("cannot write a chunk of {} rows to table /{} at row {} (chunks of {} rows)", rows,
                                   name_, rows_, chunk_rows_));
  const std::string attempted = fmt::format("write a chunk of {} rows to table /{}", rows, name_);
  const hsize_t start = rows_;
  const hsize_t new_rows = rows_ + rows;
  errors_.check(H5Dset_extent(dataset_.get(), &new_rows), attempted);
  if (H5Dwrite_chunk(dataset_.get(), H5P_DEFAULT, filter_mask, &start, bytes.size(), bytes.data()) < 0) {
    const std::string cause = innermost_hdf5_error();
    // As append(): rows that were not written must not appear as zeros.
    H5Dset_extent(dataset_.get(), &start);
    fail_to_write(attempted, cause);
  }
  rows_ = new_rows;
}

TableStorage Table::storage(bool* other_filters) const {
  TableStorage storage{chunk_rows_, 0, false};
  bool other = false;
  const PropertyHandle dcpl(
      errors_.check(H5Dget_create_plist(dataset_.get()), fmt::format("read the filters of table /{}", name_)));
  const int filters = H5Pget_nfilters(dcpl.get());
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0;
    std::size_t values = 1;
    unsigned value = 0;
    const H5Z_filter_t filter =
        H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &values, &value, 0, nullptr, nullptr);
    if (filter == H5Z_FILTER_SHUFFLE && i == 0) {
      storage.shuffle = true;
    } else if (filter == H5Z_FILTER_DEFLATE && i == filters - 1 && values >= 1) {
      storage.deflate_level = value;
    } else {
      other = true;
    }
  }
  if (other) storage = TableStorage{chunk_rows_, 0, false};
  if (other_filters != nullptr) *other_filters = other;
  return storage;
}

void Table::overwrite(std::uint64_t index, const void* row) {
  if (!dataset_.valid()) errors_.fail_plain(fmt::format("cannot write to table /{}: the file is closed", name_));
  if (index >= rows_)
    errors_.fail_plain(fmt::format("cannot rewrite row {} of table /{}: it has {}", index, name_, rows_));
  const std::string attempted = fmt::format("rewrite row {} of table /{}", index, name_);
  const hsize_t start = index;
  const hsize_t one = 1;
  const SpaceHandle file_space(errors_.check(H5Dget_space(dataset_.get()), attempted));
  errors_.check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &one, nullptr), attempted);
  const SpaceHandle memory_space(errors_.check(H5Screate_simple(1, &one, nullptr), attempted));
  if (H5Dwrite(dataset_.get(), memory_type_.get(), memory_space.get(), file_space.get(), H5P_DEFAULT, row) < 0)
    fail_to_write(attempted, innermost_hdf5_error());
}

void Table::fail_to_write(std::string_view attempted, const std::string& cause) const {
  // A direct chunk write goes to the disk at once: a full disk fails it
  // here, with the file driver's several lines (readable_cause keeps the
  // system error and says how to continue, as a failed flush does).
  errors_.fail_plain(cause.empty() ? fmt::format("cannot {} (HDF5 gave no reason)", attempted)
                                   : fmt::format("cannot {}: {}", attempted, readable_cause(cause)));
}

void Table::read(std::uint64_t first, std::uint64_t count, void* out) const {
  read_as(memory_type_.get(), first, count, out);
  fill_absent_columns(count, out);
}

void Table::fill_absent_columns(std::uint64_t count, void* out) const {
  // HDF5 leaves the bytes of members outside the row type as `out` held
  // them (it converts over a background copy of the buffer): whatever rows
  // the caller's buffer held before. The defaults are set here, so that a
  // read does not depend on the buffer.
  auto* rows = static_cast<std::byte*>(out);
  for (std::uint64_t i = 0; i < count; ++i) {
    for (const Column& column : absent_)
      std::memcpy(rows + i * row_size_ + column.offset, default_row_.data() + column.offset, column_bytes(column));
  }
}

void Table::read_as(hid_t memory_type, std::uint64_t first, std::uint64_t count, void* out) const {
  if (count == 0) return;
  if (!dataset_.valid()) errors_.fail_plain(fmt::format("cannot read table /{}: the file is closed", name_));
  const std::string attempted = fmt::format("read rows {} to {} of table /{}", first, first + count - 1, name_);
  const hsize_t start = first;
  const hsize_t rows = count;
  const SpaceHandle file_space(errors_.check(H5Dget_space(dataset_.get()), attempted));
  errors_.check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &rows, nullptr), attempted);
  const SpaceHandle memory_space(errors_.check(H5Screate_simple(1, &rows, nullptr), attempted));
  errors_.check(H5Dread(dataset_.get(), memory_type, memory_space.get(), file_space.get(), H5P_DEFAULT, out),
                attempted);
}

std::uint64_t Table::stored_chunk_rows() const {
  if (rows_ == 0 || chunk_rows_ == 0) return rows_;
  const auto stored = [&](std::uint64_t chunk) {
    const hsize_t offset = chunk * chunk_rows_;
    hsize_t bytes = 0;
    return H5Dget_chunk_storage_size(dataset_.get(), &offset, &bytes) >= 0 && bytes > 0;
  };
  // Appends fill chunks in order, so the stored ones are a prefix: the last
  // one is found by bisection. Chunk `low` is stored, chunk `high` is not.
  if (!stored(0)) return 0;
  std::uint64_t low = 0;
  std::uint64_t high = (rows_ + chunk_rows_ - 1) / chunk_rows_;
  while (high - low > 1) {
    const std::uint64_t middle = low + (high - low) / 2;
    (stored(middle) ? low : high) = middle;
  }
  return std::min(rows_, (low + 1) * chunk_rows_);
}

std::uint64_t Table::unwritten_tail() const {
  constexpr std::uint64_t kBlockRows = 1024;
  const TypeHandle id_type = memory_type(trial_id_schema(name_), errors_);
  std::vector<FixedString<kTrialIdChars>> ids;
  // Rows past the last stored chunk were never written; only the rest are
  // read (a damaged extent of 2^40 rows must not mean 2^30 reads).
  std::uint64_t end = stored_chunk_rows();
  while (end > 0) {
    const std::uint64_t count = std::min(kBlockRows, end);
    ids.assign(count, FixedString<kTrialIdChars>{});
    read_as(id_type.get(), end - count, count, ids.data());
    const auto written = std::find_if(ids.rbegin(), ids.rend(), [](const auto& id) { return id[0] != '\0'; });
    end -= static_cast<std::uint64_t>(written - ids.rbegin());
    if (written != ids.rend()) break;
  }
  return rows_ - end;
}

void Table::drop_unwritten_tail() {
  const std::uint64_t dropped = unwritten_tail();
  if (dropped == 0) return;
  // A killed writer leaves at most the few chunks of its last append
  // unwritten. An extent far beyond the stored chunks is damage, and
  // shrinking it makes HDF5 look up every chunk position it drops (2^28 for
  // 2^40 rows): refused, the file left as it is (summary still reads it).
  constexpr std::uint64_t kMaxUnwrittenChunks = 1024;
  if (dropped / chunk_rows_ > kMaxUnwrittenChunks)
    errors_.fail_plain(
        fmt::format("damaged memsweep results file: table /{} claims {} rows, {} more than the file "
                    "holds; it cannot be continued (memsweep summary still reads it)",
                    name_, rows_, dropped));
  const hsize_t size = rows_ - dropped;
  errors_.check(H5Dset_extent(dataset_.get(), &size),
                fmt::format("drop {} rows never written from the end of table /{}", dropped, name_));
  rows_ = size;
}

void Table::roll_back_to_flushed() {
  if (rows_ <= flushed_rows_ || !dataset_.valid()) return;
  const hsize_t size = flushed_rows_;
  if (H5Dset_extent(dataset_.get(), &size) >= 0) rows_ = flushed_rows_;
}

void Table::refresh(bool swmr) {
  if (swmr) errors_.check(H5Drefresh(dataset_.get()), fmt::format("refresh table /{}", name_));
  rows_ = stored_rows();
}

}  // namespace memsweep::store
