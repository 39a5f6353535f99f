#pragma once
// Counts every heap allocation of the process (all threads, all libraries:
// oneDNN and OpenMP included) by replacing malloc and friends in the test
// executable, which the dynamic linker then prefers over libc's.

#include <cstddef>
#include <cstdint>

namespace memsweep::testing {

struct AllocationCounts {
  std::uint64_t allocations = 0;  // malloc, calloc, realloc, aligned and posix_memalign calls
  std::int64_t live_bytes = 0;    // allocated minus freed, by usable size
};

AllocationCounts allocation_counts();

}  // namespace memsweep::testing
