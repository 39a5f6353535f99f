// Batch gathering against the plain copy it cannot beat, shuffling, and
// synthetic generation. Gather copies the same bytes as the baseline but
// row by row from shuffled positions; the ratio of the two throughputs is the
// price of shuffling. Run: memsweep_bench_dataset --benchmark_min_time=0.05

#include "memsweep/dataset.hpp"

#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

namespace {

constexpr std::size_t kBatchSize = 64;
constexpr int kTrainExamples = 10'000;  // 31 MB of floats: more than the caches hold, as in training
constexpr std::uint64_t kSeed = 1;

// An MNIST-shaped split (1x28x28), generated once for every benchmark.
const memsweep::Split& mnist_shaped_split() {
  static const memsweep::Dataset dataset = [] {
    memsweep::SyntheticSpec spec;
    spec.train_size = kTrainExamples;
    spec.test_size = 1;
    return memsweep::generate_synthetic(spec);
  }();
  return dataset.train;
}

// Full batches only, so every iteration copies the same number of bytes.
void BM_GatherShuffledBatch(benchmark::State& state) {
  const memsweep::Split& split = mnist_shaped_split();
  memsweep::BatchOrder order(split.size(), kBatchSize, kSeed);
  std::vector<float> images(kBatchSize * split.shape.pixels());
  std::vector<std::int32_t> labels(kBatchSize);
  const std::size_t full_batches = split.size() / kBatchSize;
  std::size_t batch = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(order.gather(batch, split, images, labels));
    benchmark::ClobberMemory();
    batch = batch + 1 == full_batches ? 0 : batch + 1;
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(images.size() * sizeof(float)));
}
BENCHMARK(BM_GatherShuffledBatch);

// The baseline: one memcpy of a batch's worth of consecutive rows.
void BM_ContiguousCopyBaseline(benchmark::State& state) {
  const memsweep::Split& split = mnist_shaped_split();
  std::vector<float> images(kBatchSize * split.shape.pixels());
  std::vector<std::int32_t> labels(kBatchSize);
  const std::size_t full_batches = split.size() / kBatchSize;
  std::size_t batch = 0;
  for (auto _ : state) {
    std::memcpy(images.data(), split.images.data() + batch * images.size(), images.size() * sizeof(float));
    std::memcpy(labels.data(), split.labels.data() + batch * kBatchSize, kBatchSize * sizeof(std::int32_t));
    benchmark::ClobberMemory();
    batch = batch + 1 == full_batches ? 0 : batch + 1;
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(images.size() * sizeof(float)));
}
BENCHMARK(BM_ContiguousCopyBaseline);

// The once-per-epoch cost: a fresh permutation of an MNIST-sized train split.
void BM_StartEpoch(benchmark::State& state) {
  memsweep::BatchOrder order(static_cast<std::size_t>(state.range(0)), kBatchSize, kSeed);
  int epoch = 0;
  for (auto _ : state) {
    order.start_epoch(++epoch);
    benchmark::DoNotOptimize(order.batch_indices(0).data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_StartEpoch)->Arg(60'000)->Unit(benchmark::kMicrosecond);

void BM_GenerateSynthetic(benchmark::State& state) {
  memsweep::SyntheticSpec spec;
  spec.train_size = static_cast<int>(state.range(0));
  spec.test_size = 1;
  for (auto _ : state) benchmark::DoNotOptimize(memsweep::generate_synthetic(spec).train.images.data());
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * state.range(0) *
                          static_cast<std::int64_t>(spec.shape.pixels() * sizeof(float)));
}
BENCHMARK(BM_GenerateSynthetic)->Arg(1'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
