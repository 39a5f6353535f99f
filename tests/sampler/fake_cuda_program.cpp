// A training program's GPU side, for tests without a GPU: through the
// CUDA driver library MEMSWEEP_TEST_CUDA_LIBRARY names (the test one,
// tests/sampler/fake_cuda.cpp), it makes a context on its first visible
// device, prints what cuMemGetInfo says ("free F total T"), allocates
// argv[1] MiB and holds it for argv[2] seconds. An allocation that fails
// is a CUDA out-of-memory, said as a framework would on its events
// channel ({"out_of_memory": "cuda"}) and on stderr, with exit status 1.

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

template <typename Function>
Function symbol(void* handle, const char* name) {
  auto* found = reinterpret_cast<Function>(::dlsym(handle, name));
  if (found == nullptr) {
    std::fprintf(stderr, "the CUDA library lacks %s\n", name);
    std::exit(2);
  }
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fake_cuda_program MIB SECONDS\n");
    return 2;
  }
  const char* path = std::getenv("MEMSWEEP_TEST_CUDA_LIBRARY");
  void* cuda = ::dlopen(path != nullptr ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr) {
    std::fprintf(stderr, "no CUDA driver: %s\n", ::dlerror());
    return 2;
  }
  const auto init = symbol<int (*)(unsigned)>(cuda, "cuInit");
  const auto device_get = symbol<int (*)(int*, int)>(cuda, "cuDeviceGet");
  const auto context_create = symbol<int (*)(void**, unsigned, int)>(cuda, "cuCtxCreate_v2");
  const auto memory_info = symbol<int (*)(std::size_t*, std::size_t*)>(cuda, "cuMemGetInfo_v2");
  const auto allocate = symbol<int (*)(std::uint64_t*, std::size_t)>(cuda, "cuMemAlloc_v2");
  int device = 0;
  void* context = nullptr;
  if (init(0) != 0 || device_get(&device, 0) != 0 || context_create(&context, 0, device) != 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 2;
  }
  std::size_t free_bytes = 0, total = 0;
  memory_info(&free_bytes, &total);
  std::printf("free %zu total %zu\n", free_bytes, total);
  std::fflush(stdout);
  std::uint64_t pointer = 0;
  const std::size_t bytes = std::strtoull(argv[1], nullptr, 10) << 20;
  if (allocate(&pointer, bytes) != 0) {
    if (const char* fd = std::getenv("MEMSWEEP_EVENTS_FD"); fd != nullptr) {
      const std::string line = "{\"out_of_memory\": \"cuda\"}\n";
      [[maybe_unused]] const ssize_t wrote = ::write(std::atoi(fd), line.data(), line.size());
    }
    std::fprintf(stderr, "CUDA out of memory: tried to allocate %s MiB\n", argv[1]);
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(std::strtod(argv[2], nullptr)));
  return 0;
}
