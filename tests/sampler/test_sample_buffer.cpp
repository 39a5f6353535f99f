// The chunk handoff between the tick and the consumer: nothing lost while
// the consumer keeps up, drops counted (never blocking) when it does not.

#include "sampler/sample_buffer.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace memsweep::sampler::detail {
namespace {

constexpr std::int64_t kNoAgeLimit = INT64_MAX;

Sample numbered(std::int64_t i) {
  Sample sample;
  sample.t_ns = i;
  return sample;
}

TEST(SampleBuffer, ConcurrentConsumerKeepingUpLosesNothing) {
  constexpr std::size_t kChunks = 16;
  constexpr std::int64_t kSamples = 40 * static_cast<std::int64_t>(kSamplesPerChunk);
  SampleBuffer buffer(kChunks);
  std::atomic<bool> done{false};
  std::vector<std::int64_t> received;
  std::vector<std::uint64_t> sequences;
  std::thread consumer([&] {
    const auto take = [&](const SampleChunk& chunk) {
      sequences.push_back(chunk.sequence);
      for (const Sample& sample : chunk.view()) received.push_back(sample.t_ns);
    };
    while (!done.load()) {
      buffer.drain(take);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    buffer.drain(take);
  });
  for (std::int64_t i = 0; i < kSamples; ++i) {
    EXPECT_TRUE(buffer.push(numbered(i), kNoAgeLimit));
    // Paced like a fast sampler: a chunk per millisecond leaves the consumer
    // 16 ms of slack.
    if (i % static_cast<std::int64_t>(kSamplesPerChunk) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  buffer.hand_over();
  done = true;
  consumer.join();

  EXPECT_EQ(buffer.dropped_total(), 0U);
  ASSERT_EQ(received.size(), static_cast<std::size_t>(kSamples));
  for (std::int64_t i = 0; i < kSamples; ++i) ASSERT_EQ(received[static_cast<std::size_t>(i)], i);
  for (std::size_t i = 0; i < sequences.size(); ++i) EXPECT_EQ(sequences[i], i);
}

TEST(SampleBuffer, StalledConsumerMeansCountedDropsNotBlocking) {
  SampleBuffer buffer(2);
  const std::int64_t capacity = 2 * static_cast<std::int64_t>(kSamplesPerChunk);
  constexpr std::int64_t kExtra = 100;
  for (std::int64_t i = 0; i < capacity; ++i) EXPECT_TRUE(buffer.push(numbered(i), kNoAgeLimit));
  for (std::int64_t i = 0; i < kExtra; ++i) EXPECT_FALSE(buffer.push(numbered(capacity + i), kNoAgeLimit));
  EXPECT_EQ(buffer.dropped_total(), static_cast<std::uint64_t>(kExtra));

  std::size_t kept = 0;
  EXPECT_EQ(buffer.drain([&](const SampleChunk& chunk) { kept += chunk.count; }), 2U);
  EXPECT_EQ(kept, static_cast<std::size_t>(capacity));

  // The next chunk says how many samples are missing before it.
  ASSERT_TRUE(buffer.push(numbered(capacity + kExtra), kNoAgeLimit));
  buffer.hand_over();
  std::vector<SampleChunk const*> chunks;
  buffer.drain([&](const SampleChunk& chunk) {
    EXPECT_EQ(chunk.dropped_before, static_cast<std::uint64_t>(kExtra));
    EXPECT_EQ(chunk.sequence, 2U);
    ASSERT_EQ(chunk.count, 1U);
    EXPECT_EQ(chunk.samples[0].t_ns, capacity + kExtra);
  });
}

TEST(SampleBuffer, AgedPartialChunkIsHandedOver) {
  SampleBuffer buffer(4);
  constexpr std::int64_t kMaxAge = 1000;
  EXPECT_TRUE(buffer.push(numbered(0), kMaxAge));
  EXPECT_TRUE(buffer.push(numbered(500), kMaxAge));
  EXPECT_EQ(buffer.drain([](const SampleChunk&) {}), 0U);
  EXPECT_TRUE(buffer.push(numbered(1000), kMaxAge));
  std::size_t count = 0;
  EXPECT_EQ(buffer.drain([&](const SampleChunk& chunk) { count = chunk.count; }), 1U);
  EXPECT_EQ(count, 3U);
}

TEST(SampleBuffer, ChunkIsRecycledEvenWhenTheConsumerThrows) {
  SampleBuffer buffer(1);
  for (std::size_t i = 0; i < kSamplesPerChunk; ++i) buffer.push(numbered(0), kNoAgeLimit);
  EXPECT_THROW(buffer.drain([](const SampleChunk&) { throw std::runtime_error("send failed"); }), std::runtime_error);
  EXPECT_TRUE(buffer.push(numbered(1), kNoAgeLimit));
  EXPECT_EQ(buffer.dropped_total(), 0U);
}

TEST(IndexRing, FullAndEmptyAreReported) {
  IndexRing ring(3);  // rounded up to 4 slots
  std::uint32_t value = 0;
  EXPECT_FALSE(ring.pop(value));
  for (std::uint32_t i = 0; i < 4; ++i) EXPECT_TRUE(ring.push(i));
  EXPECT_FALSE(ring.push(9));
  for (std::uint32_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(ring.pop(value));
    EXPECT_EQ(value, i);
  }
  EXPECT_FALSE(ring.pop(value));
}

}  // namespace
}  // namespace memsweep::sampler::detail
