#include "trainer/alloc_counter.hpp"

#include <malloc.h>

#include <atomic>
#include <cerrno>

// glibc's own entry points, which the replacements forward to.
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);
}

namespace {

std::atomic<std::uint64_t> g_allocations{0};
std::atomic<std::int64_t> g_live_bytes{0};

void* counted(void* p) {
  if (p != nullptr) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    g_live_bytes.fetch_add(static_cast<std::int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  }
  return p;
}

void uncount(void* p) {
  if (p != nullptr) g_live_bytes.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
}

}  // namespace

extern "C" {

void* malloc(std::size_t size) { return counted(__libc_malloc(size)); }
void* calloc(std::size_t count, std::size_t size) { return counted(__libc_calloc(count, size)); }
void* realloc(void* p, std::size_t size) {
  uncount(p);
  return counted(__libc_realloc(p, size));
}
void free(void* p) {
  uncount(p);
  __libc_free(p);
}
void* memalign(std::size_t alignment, std::size_t size) { return counted(__libc_memalign(alignment, size)); }
void* aligned_alloc(std::size_t alignment, std::size_t size) { return counted(__libc_memalign(alignment, size)); }
int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  void* p = counted(__libc_memalign(alignment, size));
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

}  // extern "C"

namespace memsweep::testing {

AllocationCounts allocation_counts() {
  return {g_allocations.load(std::memory_order_relaxed), g_live_bytes.load(std::memory_order_relaxed)};
}

}  // namespace memsweep::testing
