#pragma once
// Seeded randomness and hashing that give the same values on every compiler
// and standard library. The std:: distributions and std::shuffle are
// implementation-defined, so a sweep expanded with them could differ between
// the login node's and the compute nodes' builds; mt19937_64's raw output is
// fixed by the standard, and the mappings below are ours.

#include <cstdint>
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

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

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

  // Standard normal (Box-Muller; the second value is dropped for simplicity).
  double normal();

 private:
  std::mt19937_64 engine_;
};

}  // namespace memsweep
