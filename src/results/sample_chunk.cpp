// A /samples chunk made outside the store: pack, shuffle, deflate, as
// HDF5's filter pipeline (H5Z shuffle, then H5Z deflate: compress2) does.

#include "memsweep/sample_chunk.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace memsweep {
namespace {

// The packed type is the row struct without its padding: trial_id to phase
// (contiguous), then t to gpu_tree_used (contiguous), then the counters.
constexpr std::size_t kHeadBytes = offsetof(SampleRow, phase) + sizeof(SampleRow::phase);
constexpr std::size_t kBodyOffset = offsetof(SampleRow, t);
constexpr std::size_t kBodyBytes = offsetof(SampleRow, counters) - kBodyOffset;
constexpr std::size_t kCounterBytes = sizeof(SampleRow::counters[0]);
static_assert(offsetof(SampleRow, attempt) == kTrialIdChars && offsetof(SampleRow, rank) == kTrialIdChars + 4 &&
              offsetof(SampleRow, epoch) == kTrialIdChars + 8 && offsetof(SampleRow, phase) == kTrialIdChars + 12);
static_assert(offsetof(SampleRow, gpu_tree_used) + sizeof(SampleRow::gpu_tree_used) == offsetof(SampleRow, counters));
static_assert(std::is_trivially_copyable_v<CompressedChunkInfo> && sizeof(SampleChunkSeries) == 72 &&
              sizeof(CompressedChunkInfo) == kTrialIdChars + 5 * 4 + 8 + sizeof(SampleChunkSeries));

SampleChunkSeries series_of(std::span<const SampleRow> rows) {
  SampleChunkSeries series;
  for (const SampleRow& row : rows) {
    if (series.samples == 0) {
      series.rank = row.rank;
      series.first_rss = row.rss;
      series.last_t = row.t;
      series.last_epoch = row.epoch;
    }
    ++series.samples;
    if (row.rss >= 0) {
      series.peak_rss = std::max(series.peak_rss, row.rss);
      series.rss_sum += static_cast<double>(row.rss);
      ++series.rss_count;
    }
    if (row.sys_used >= 0) {
      series.sys_used_sum += static_cast<double>(row.sys_used);
      ++series.sys_used_count;
    }
    series.last_t = std::max(series.last_t, row.t);
    series.last_epoch = std::max(series.last_epoch, row.epoch);
  }
  return series;
}

}  // namespace

bool CompressedSampleChunk::fits(const SampleChunkFormat& format) const {
  return info.counters == format.counters && info.deflate_level == format.deflate_level &&
         (info.shuffle != 0) == format.shuffle && info.rows == format.chunk_rows && info.filter_mask == 0;
}

std::size_t packed_sample_row_bytes(std::size_t counters) { return kHeadBytes + kBodyBytes + counters * kCounterBytes; }

void pack_sample_rows(std::span<const SampleRow> rows, std::size_t counters, std::byte* dst) {
  const std::size_t tail = kBodyBytes + counters * kCounterBytes;
  for (const SampleRow& row : rows) {
    const auto* src = reinterpret_cast<const std::byte*>(&row);
    std::memcpy(dst, src, kHeadBytes);
    std::memcpy(dst + kHeadBytes, src + kBodyOffset, tail);
    dst += kHeadBytes + tail;
  }
}

void unpack_sample_rows(const std::byte* src, std::size_t counters, std::span<SampleRow> rows) {
  const std::size_t tail = kBodyBytes + counters * kCounterBytes;
  for (SampleRow& row : rows) {
    auto* dst = reinterpret_cast<std::byte*>(&row);
    std::memcpy(dst, src, kHeadBytes);
    std::memcpy(dst + kBodyOffset, src + kHeadBytes, tail);
    src += kHeadBytes + tail;
  }
}

CompressedSampleChunk compress_sample_chunk(std::span<const SampleRow> rows, const SampleChunkFormat& format) {
  if (format.counters > kMaxCounters) throw std::runtime_error("sample chunk: more counter columns than a row holds");
  if (rows.empty() || rows.size() > format.chunk_rows)
    throw std::runtime_error("sample chunk: " + std::to_string(rows.size()) + " rows for a chunk of " +
                             std::to_string(format.chunk_rows));
  for (const SampleRow& row : rows)
    if (row.trial_id != rows.front().trial_id || row.attempt != rows.front().attempt)
      throw std::runtime_error("sample chunk: rows of more than one trial attempt");
  const std::size_t element = packed_sample_row_bytes(format.counters);
  const std::size_t count = rows.size();
  // HDF5 stores the whole chunk, rows past the dataset's end included; they
  // are never read (a chunk is written directly only when whole).
  std::vector<std::byte> packed(count * element);
  pack_sample_rows(rows, format.counters, packed.data());
  std::vector<std::byte> shuffled;
  const std::vector<std::byte>* input = &packed;
  if (format.shuffle && count > 1) {
    // H5Z shuffle: byte j of element i goes to j * count + i.
    shuffled.resize(packed.size());
    for (std::size_t i = 0; i < count; ++i) {
      const std::byte* src = packed.data() + i * element;
      for (std::size_t j = 0; j < element; ++j) shuffled[j * count + i] = src[j];
    }
    input = &shuffled;
  }
  CompressedSampleChunk chunk;
  chunk.info.trial_id = rows.front().trial_id;
  chunk.info.attempt = rows.front().attempt;
  chunk.info.counters = format.counters;
  chunk.info.deflate_level = format.deflate_level;
  chunk.info.shuffle = format.shuffle ? 1 : 0;
  chunk.info.rows = count;
  chunk.info.series = series_of(rows);
  uLongf size = compressBound(static_cast<uLong>(input->size()));
  chunk.bytes.resize(size);
  const int status =
      compress2(reinterpret_cast<Bytef*>(chunk.bytes.data()), &size, reinterpret_cast<const Bytef*>(input->data()),
                static_cast<uLong>(input->size()), static_cast<int>(format.deflate_level));
  if (status != Z_OK)
    throw std::runtime_error("sample chunk: zlib's compress2 failed (status " + std::to_string(status) + ")");
  chunk.bytes.resize(size);
  return chunk;
}

std::vector<SampleRow> inflate_sample_chunk(const CompressedSampleChunk& chunk) {
  const CompressedChunkInfo& info = chunk.info;
  if (info.counters > kMaxCounters || info.rows == 0 || info.rows > kMaxWorkerChunkRows || info.filter_mask != 0)
    throw std::runtime_error("sample chunk: a chunk head that no memsweep build makes");
  const std::size_t element = packed_sample_row_bytes(info.counters);
  const std::size_t count = info.rows;
  std::vector<std::byte> shuffled(count * element);
  uLongf size = static_cast<uLongf>(shuffled.size());
  const int status =
      uncompress(reinterpret_cast<Bytef*>(shuffled.data()), &size, reinterpret_cast<const Bytef*>(chunk.bytes.data()),
                 static_cast<uLong>(chunk.bytes.size()));
  if (status != Z_OK || size != shuffled.size())
    throw std::runtime_error("sample chunk: its bytes do not inflate to " + std::to_string(count) + " rows");
  std::vector<std::byte> packed;
  const std::vector<std::byte>* rows_bytes = &shuffled;
  if (info.shuffle != 0 && count > 1) {
    packed.resize(shuffled.size());
    for (std::size_t i = 0; i < count; ++i) {
      std::byte* dst = packed.data() + i * element;
      for (std::size_t j = 0; j < element; ++j) dst[j] = shuffled[j * count + i];
    }
    rows_bytes = &packed;
  }
  std::vector<SampleRow> rows(count);
  unpack_sample_rows(rows_bytes->data(), info.counters, rows);
  return rows;
}

std::uint64_t worker_sample_chunk_rows(int sampler_interval_ms, std::chrono::milliseconds flush_interval) {
  const int interval = sampler_interval_ms > 0 ? sampler_interval_ms : kDefaultSamplerIntervalMs;
  const auto rows = static_cast<std::uint64_t>(std::max<std::int64_t>(0, flush_interval.count()) * 3 / 4 / interval);
  return std::clamp(rows, kMinWorkerChunkRows, kMaxWorkerChunkRows);
}

SampleChunkFormat worker_sample_chunk_format(std::size_t counters, int sampler_interval_ms,
                                             std::chrono::milliseconds flush_interval) {
  return SampleChunkFormat{static_cast<std::uint32_t>(counters), kSamplesDeflateLevel, kSamplesShuffle,
                           worker_sample_chunk_rows(sampler_interval_ms, flush_interval)};
}

}  // namespace memsweep
