// Sweeps at scale (issue 29): a sweep file's text to what every rank holds
// before the first trial (parse_sweep + sweep_hash: its trials are made
// from their positions when handed out, never listed), for a [grid], a
// [random] and explicit [[trial]] tables of 10^4 to 10^7 trials (explicit:
// 10^4 and 10^5). Figures per case:
//   start_ms     parse and hash: what each rank spends before a trial;
//   peak_MiB     the most heap in use meanwhile, above what was in use
//                before it (this binary counts operator new);
//   kept_MiB     the sweep state a rank keeps once parsed;
//   made/s       trials made from their positions (spread over the sweep),
//                per second: rank 0's cost per trial handed out, and a
//                resume's walk;
//   x_ids        making a trial over hashing a ready-made trial's id,
//                measured in the same run: the part no sweep can skip.
// The targets: the first trial within 1 s and < 16 MiB of sweep state per
// rank at 10^7 trials. A sweep of at most 10^5 trials per repeat is walked
// when parsed (every trial checked, duplicates left out), so its start_ms
// grows with it up to there.
//
// Parsing long lines (issue 28): 4,096 to 262,144 values in one array, all
// on one line or one per line, as a [grid] axis (each value a trial) and as
// a [random] choice (one trial: the parse alone). Figures per case:
//   values/s     values in the file read per second, for all it takes;
//   x_per_line   its time over the same values one per line, measured in
//                the same run (1 when the line's length costs nothing).
// The target: linear, >= 1 M values/s either way. toml11 3.7 collected
// every value's comments by scanning its whole line, quadratic in a line's
// values; config/toml_no_comments.hpp skips that.
//
// Run: memsweep_bench_expand --benchmark_min_time=0.5 (the 10^4 cases need
// several iterations to settle); --benchmark_filter=Line for the long lines.

#include "memsweep/config.hpp"
#include "memsweep/results.hpp"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>
#include <string>

// ---- heap accounting: every operator new and delete of the process ----------

namespace {

std::atomic<std::size_t> heap_in_use{0};
std::atomic<std::size_t> heap_peak{0};

// The block's size sits in front of it, so that delete knows what to subtract.
constexpr std::size_t kHeader = alignof(std::max_align_t);

void* counted_allocate(std::size_t size) {
  auto* block = static_cast<unsigned char*>(std::malloc(size + kHeader));
  if (block == nullptr) throw std::bad_alloc();
  *reinterpret_cast<std::size_t*>(block) = size;
  const std::size_t now = heap_in_use.fetch_add(size, std::memory_order_relaxed) + size;
  std::size_t peak = heap_peak.load(std::memory_order_relaxed);
  while (now > peak && !heap_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return block + kHeader;
}

void counted_free(void* pointer) noexcept {
  if (pointer == nullptr) return;
  auto* block = static_cast<unsigned char*>(pointer) - kHeader;
  heap_in_use.fetch_sub(*reinterpret_cast<std::size_t*>(block), std::memory_order_relaxed);
  std::free(block);
}

}  // namespace

void* operator new(std::size_t size) { return counted_allocate(size); }
void* operator new[](std::size_t size) { return counted_allocate(size); }
void operator delete(void* pointer) noexcept { counted_free(pointer); }
void operator delete[](void* pointer) noexcept { counted_free(pointer); }
void operator delete(void* pointer, std::size_t) noexcept { counted_free(pointer); }
void operator delete[](void* pointer, std::size_t) noexcept { counted_free(pointer); }

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

const char* const kDefaults =
    "[defaults]\n"
    "dataset = \"synthetic\"\n"
    "synthetic = { shape = [1, 4, 4], classes = 2, train_size = 8, test_size = 4, noise = 0.5, seed = 1 }\n"
    "hidden = [4]\n";

std::string numbers(std::size_t count, const char* format) {
  std::string text;
  for (std::size_t k = 1; k <= count; ++k) text += fmt::format(fmt::runtime(format), k) + (k < count ? ", " : "");
  return text;
}

// 10^4: 100 x 100; each further factor of 10 an `epochs` axis of 10 or 100.
std::string grid_text(std::size_t trials) {
  std::string text = std::string(kDefaults) + "[grid]\n";
  text += "learning_rate = [" + numbers(100, "{}e-5") + "]\n";
  text += "batch_size = [" + numbers(100, "{}") + "]\n";
  if (trials > 10'000) text += "epochs = [" + numbers(trials / 10'000, "{}") + "]\n";
  return text;
}

std::string random_text(std::size_t trials) {
  return std::string(kDefaults) + fmt::format(
                                      "[random]\ncount = {}\nlearning_rate = {{ log_uniform = [1e-5, 1e-1] }}\n"
                                      "batch_size = {{ int_uniform = [1, 512] }}\n",
                                      trials);
}

std::string explicit_text(std::size_t trials) {
  std::string text = kDefaults;
  for (std::size_t k = 0; k < trials; ++k)
    text += fmt::format("[[trial]]\nlearning_rate = {}e-7\nbatch_size = {}\n", k + 1, k % 512 + 1);
  return text;
}

// The baseline: the id of a trial already built, per second.
double ids_per_second() {
  constexpr std::size_t kIds = 200'000;
  memsweep::TrialSpec trial;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t k = 0; k < kIds; ++k) {
    trial.seed = k;
    benchmark::DoNotOptimize(memsweep::trial_id(trial));
  }
  return kIds / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void expand(benchmark::State& state, std::string (*text_of)(std::size_t)) {
  constexpr std::size_t kMade = 20'000;
  const auto trials = static_cast<std::size_t>(state.range(0));
  const std::string text = text_of(trials);
  static const double baseline = ids_per_second();
  double peak = 0.0, kept = 0.0, seconds = 0.0, made_per_second = 0.0;
  for (auto _ : state) {
    const std::size_t before = heap_in_use.load();
    heap_peak.store(before);
    const auto start = std::chrono::steady_clock::now();
    memsweep::SweepSpec sweep = memsweep::parse_sweep(text, "bench.toml");
    benchmark::DoNotOptimize(memsweep::sweep_hash(sweep));
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    peak = std::max(peak, static_cast<double>(heap_peak.load() - before));
    kept = static_cast<double>(heap_in_use.load() - before);
    if (sweep.trials.size() != trials) state.SkipWithError("the sweep does not have the trials asked for");
    state.PauseTiming();
    const std::size_t step = std::max<std::size_t>(trials / kMade, 1);
    std::size_t made = 0;
    const auto making = std::chrono::steady_clock::now();
    for (std::size_t position = 0; position < trials; position += step, ++made)
      benchmark::DoNotOptimize(sweep.trials[position].id);
    made_per_second =
        static_cast<double>(made) / std::chrono::duration<double>(std::chrono::steady_clock::now() - making).count();
    sweep = {};
    state.ResumeTiming();
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["start_ms"] = seconds / iterations * 1e3;
  state.counters["peak_MiB"] = peak / kMiB;
  state.counters["kept_MiB"] = kept / kMiB;
  state.counters["made/s"] = made_per_second;
  state.counters["x_ids"] = baseline / made_per_second;
}

// ---- long lines -------------------------------------------------------------

enum class Layout { one_line, one_per_line };

std::string value_list(std::size_t count, Layout layout) {
  std::string text = "[";
  for (std::size_t k = 1; k <= count; ++k)
    text += fmt::format("{}{}", k, k == count ? "" : layout == Layout::one_line ? ", " : ",\n");
  return text + "]\n";
}

// Each value a grid point, so a trial: what `plan` of such a file does.
std::string grid_axis_text(std::size_t values, Layout layout) {
  return std::string(kDefaults) + "[grid]\nbatch_size = " + value_list(values, layout);
}

// One trial drawn from the values: parsing them is nearly all the work.
std::string choice_text(std::size_t values, Layout layout) {
  // A table, not an inline one: TOML keeps an inline table on one line.
  return std::string(kDefaults) + "[random]\ncount = 1\n[random.batch_size]\nchoice = " + value_list(values, layout);
}

double parse_seconds(const std::string& text) {
  const auto start = std::chrono::steady_clock::now();
  benchmark::DoNotOptimize(memsweep::parse_sweep(text, "bench.toml").trials.size());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void long_line(benchmark::State& state, std::string (*text_of)(std::size_t, Layout), std::size_t trials_per_value) {
  const auto values = static_cast<std::size_t>(state.range(0));
  const std::string text = text_of(values, Layout::one_line);
  // The baseline, once per case: the same values one per line.
  const double per_line = parse_seconds(text_of(values, Layout::one_per_line));
  double seconds = 0.0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const memsweep::SweepSpec sweep = memsweep::parse_sweep(text, "bench.toml");
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::size_t expected = trials_per_value == 0 ? 1 : values * trials_per_value;
    if (sweep.trials.size() != expected) state.SkipWithError("the sweep did not expand to the trials expected");
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["values/s"] =
      benchmark::Counter(static_cast<double>(values) * iterations, benchmark::Counter::kIsRate);
  state.counters["x_per_line"] = seconds / iterations / per_line;
}

void BM_GridAxisOnOneLine(benchmark::State& state) { long_line(state, grid_axis_text, 1); }
void BM_ChoiceOnOneLine(benchmark::State& state) { long_line(state, choice_text, 0); }

BENCHMARK(BM_GridAxisOnOneLine)->RangeMultiplier(4)->Range(4096, 262'144)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ChoiceOnOneLine)->RangeMultiplier(4)->Range(4096, 262'144)->Unit(benchmark::kMillisecond);

// ---- expansion ---------------------------------------------------------------

void BM_ExpandGrid(benchmark::State& state) { expand(state, grid_text); }
void BM_ExpandRandom(benchmark::State& state) { expand(state, random_text); }
void BM_ExpandExplicitTrials(benchmark::State& state) { expand(state, explicit_text); }

BENCHMARK(BM_ExpandGrid)->RangeMultiplier(10)->Range(10'000, 10'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExpandRandom)->RangeMultiplier(10)->Range(10'000, 10'000'000)->Unit(benchmark::kMillisecond);
// Up to 10^5: 10^6 tables would be a 50 MB file, past the sweep file's size limit.
BENCHMARK(BM_ExpandExplicitTrials)->RangeMultiplier(10)->Range(10'000, 100'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
