#pragma once
// One table of the results file: a 1-D, chunked, extendable dataset of
// compound rows, with its row type built once, so that an append is an
// extend and one hyperslab write. Rows are read by column name: a file of an
// older schema version reads through a row type of the columns it has.

#include "store/hdf5_handles.hpp"
#include "store/schema.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::store {

class Table {
 public:
  // Creates /<schema.name>, empty, with a `unit:<column>` attribute per
  // column and a `description`.
  static Table create(hid_t file, const TableSchema& schema, const TableStorage& storage, const Hdf5Errors& errors);
  // Opens /<schema.name> of a file of schema version `schema_version`;
  // throws StoreError when the table is missing or lacks a column that
  // version has. Columns of later versions that the file lacks are left out
  // of the row type: read() gives them the row struct's default value.
  static Table open(hid_t file, const TableSchema& schema, int schema_version, const Hdf5Errors& errors);

  const std::string& name() const { return name_; }
  std::uint64_t rows() const { return rows_; }
  std::uint64_t chunk_rows() const { return chunk_rows_; }

  // `rows` points at `count` row structs of the schema's layout. Only to a
  // table with every column of the schema.
  void append(const void* rows, std::size_t count);
  // Appends one whole chunk of `rows` rows (== chunk_rows()) as `bytes`,
  // already through the table's filters (HDF5's direct chunk write), at the
  // chunk-aligned end: only when rows() % chunk_rows() == 0.
  void append_chunk(std::span<const std::byte> bytes, std::uint32_t filter_mask, std::uint64_t rows);
  // The dataset's chunk size and filters, as stored in the file (a filter
  // other than shuffle and deflate reads as deflate_level 0, shuffle false,
  // and `other_filters`).
  TableStorage storage(bool* other_filters = nullptr) const;
  // Rewrites row `index` (< rows()) in place: a run's row when it ends.
  void overwrite(std::uint64_t index, const void* row);
  // Rows [first, first + count) into `out`, in the schema's layout, or in
  // `memory_type`'s (a compound of some of the columns).
  void read(std::uint64_t first, std::uint64_t count, void* out) const;
  void read_as(hid_t memory_type, std::uint64_t first, std::uint64_t count, void* out) const;
  // Re-reads the row count; with `swmr`, first drops what HDF5 cached of the
  // dataset so that rows a SWMR writer added since are seen.
  void refresh(bool swmr);
  // Rows at the end of the table without a trial id (trial_id_schema() says
  // why). For tables with that column.
  std::uint64_t unwritten_tail() const;
  // The rows up to the end of the last chunk stored in the file.
  std::uint64_t stored_chunk_rows() const;
  // A reader leaves them out of rows(); a writer shrinks the table.
  void hide_unwritten_tail() { rows_ -= unwritten_tail(); }
  void drop_unwritten_tail();
  // The rows the writer's last flush made durable: a flush that fails (a
  // full disk) may still write the table's new size without the chunks it
  // covers, which then read as rows of zeros. Setting the size back, and
  // flushing again, keeps such rows out of the file where HDF5 can.
  void mark_flushed() { flushed_rows_ = rows_; }
  // Best effort, for an error path: the size stays when HDF5 refuses.
  void roll_back_to_flushed();
  void close() { dataset_.reset(); }

 private:
  Table(std::string name, DatasetHandle dataset, TypeHandle memory_type, std::uint64_t chunk_rows,
        const Hdf5Errors& errors);
  std::uint64_t stored_rows() const;
  // Throws the StoreError of a write HDF5 refused: HDF5's `cause` made one line.
  [[noreturn]] void fail_to_write(std::string_view attempted, const std::string& cause) const;
  void fill_absent_columns(std::uint64_t count, void* out) const;

  std::string name_;
  DatasetHandle dataset_;
  TypeHandle memory_type_;
  // Columns of the schema that the file's table lacks (an older version),
  // and a default row to take their values from.
  std::vector<Column> absent_;
  std::vector<std::byte> default_row_;
  std::size_t row_size_ = 0;
  Hdf5Errors errors_;
  std::uint64_t chunk_rows_ = 1;
  std::uint64_t rows_ = 0;
  std::uint64_t flushed_rows_ = 0;
};

}  // namespace memsweep::store
