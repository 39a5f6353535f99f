#pragma once
// Seeded randomness and hashing that give the same values on every compiler
// and standard library. The std:: distributions and std::shuffle are
// implementation-defined, so a sweep expanded with them could differ between
// the login node's and the compute nodes' builds; mt19937_64's raw output is
// fixed by the standard, and the mappings below are ours.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string_view>

namespace memsweep {

// 64-bit FNV-1a: a stable content hash (trial ids, derived seeds).
constexpr std::uint64_t stable_hash(std::string_view bytes, std::uint64_t basis = 0xcbf29ce484222325ULL) {
  std::uint64_t hash = basis;
  for (const char c : bytes) {
    hash ^= static_cast<std::uint8_t>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// Combines a seed with a stream number (a draw index, an epoch) so that
// related streams are statistically independent (splitmix64 finaliser).
constexpr std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// std::mt19937_64's output stream, for streams that draw a few numbers
// each (a random search seeds one per trial and field): the first 156
// outputs come from the 157 state words they depend on, built as they are
// needed, instead of the full engine's 312 words seeded and twisted first,
// which was most of the time of drawing 10^6 trials. Past 156 outputs it
// is the standard engine itself.
class ShortStreamMt19937_64 {
 public:
  using result_type = std::uint64_t;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return UINT64_MAX; }

  explicit ShortStreamMt19937_64(std::uint64_t seed) : seed_(seed) { words_[0] = seed; }

  result_type operator()() {
    if (drawn_ >= kShort) {
      if (!full_) {
        full_.emplace(seed_);
        full_->discard(kShort);
      }
      return (*full_)();
    }
    const std::size_t i = drawn_++;
    // The seeding recurrence, as far as word i + 156.
    for (; seeded_ <= i + kShort; ++seeded_)
      words_[seeded_] = 6364136223846793005ULL * (words_[seeded_ - 1] ^ (words_[seeded_ - 1] >> 62)) + seeded_;
    // The standard's twist of word i (i < n - m reads only words not yet twisted) and its tempering.
    constexpr std::uint64_t kUpper = ~std::uint64_t{0} << 31, kLower = ~kUpper;
    const std::uint64_t y = (words_[i] & kUpper) | (words_[i + 1] & kLower);
    std::uint64_t z = words_[i + kShort] ^ (y >> 1) ^ ((y & 1) ? 0xb5026f5aa96619e9ULL : 0);
    z ^= (z >> 29) & 0x5555555555555555ULL;
    z ^= (z << 17) & 0x71d67fffeda60000ULL;
    z ^= (z << 37) & 0xfff7eee000000000ULL;
    return z ^ (z >> 43);
  }

 private:
  static constexpr std::size_t kShort = 156;  // mt19937_64's n - m
  std::uint64_t seed_;
  std::array<std::uint64_t, 2 * kShort> words_{};
  std::size_t seeded_ = 1;
  std::size_t drawn_ = 0;
  std::optional<std::mt19937_64> full_;
};

// Uniform draws from a 64-bit engine's raw output, mapped the same way on
// every platform.
template <typename Engine>
class BasicRng {
 public:
  explicit BasicRng(std::uint64_t seed) : engine_(seed) {}

  std::uint64_t next() { return engine_(); }

  // Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  double uniform(double low, double high) { return low + (high - low) * uniform01(); }

  // Uniform integer in [low, high], both inclusive, without modulo bias.
  std::int64_t uniform_int(std::int64_t low, std::int64_t high) {
    const std::uint64_t span = static_cast<std::uint64_t>(high - low) + 1;
    if (span == 0) return static_cast<std::int64_t>(next());  // the full 64-bit range
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    std::uint64_t draw = next();
    while (draw >= limit) draw = next();
    return low + static_cast<std::int64_t>(draw % span);
  }

 private:
  Engine engine_;
};

class Rng : public BasicRng<std::mt19937_64> {
 public:
  using BasicRng::BasicRng;

  // Standard normal (Box-Muller; the second value is dropped for simplicity).
  double normal();
};

// The same draws as Rng's, for a stream that makes only a few.
using ShortStreamRng = BasicRng<ShortStreamMt19937_64>;

}  // namespace memsweep
