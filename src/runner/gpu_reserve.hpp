#pragma once
// A GPU limit held as memory the program cannot get (docs/runner.md, "A
// GPU limit"): before a trial with a GPU limit below its device's size
// starts, a small helper process (`memsweep gpu-reserve`, on the trial's
// device alone) allocates what the device has free beyond the limit
// through the CUDA driver API (libcuda.so.1, loaded at run time like
// NVML), so that the program's allocator meets the limit as a real CUDA
// out-of-memory, whatever its framework. It holds it until the rank closes
// its pipe (the trial's end, or the rank's death) and then exits, which
// frees it.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <sys/types.h>

namespace memsweep::runner::detail {

inline constexpr const char* kCudaLibraryName = "libcuda.so.1";
// Tests only: a library that answers the CUDA driver's calls instead
// (tests/sampler/fake_cuda.cpp).
inline constexpr const char* kCudaLibraryVariable = "MEMSWEEP_TEST_CUDA_LIBRARY";
// How long the helper may take to make its context and allocate: a CUDA
// context takes a second or more on a large device.
inline constexpr std::chrono::seconds kReserveStartTimeout{60};

// Pure: what the reserve holds so that `limit` bytes are left free, given
// what the device has free once the helper's own context is made.
// nullopt when the device has less than the limit free (other processes
// hold it): the limit cannot be given.
std::optional<std::uint64_t> reserve_bytes(std::uint64_t free_bytes, std::uint64_t limit);

struct ReserveHeld {
  std::uint64_t reserved = 0;    // what the helper holds
  std::uint64_t free_after = 0;  // what the device has free with it held: what the program can get
};

class GpuReserve {
 public:
  // Starts the helper on the device CUDA_VISIBLE_DEVICES names as
  // `visible_id` and waits for its answer. Never throws: problem() says
  // why nothing is held (no CUDA driver, the device too full, ...).
  static GpuReserve start(const std::string& executable, const std::string& visible_id, std::uint64_t limit);
  GpuReserve(GpuReserve&& other) noexcept;
  GpuReserve& operator=(GpuReserve&&) = delete;
  GpuReserve(const GpuReserve&) = delete;
  ~GpuReserve();  // lets go of the memory: the helper exits, and is reaped

  const std::optional<ReserveHeld>& held() const { return held_; }
  const std::string& problem() const { return problem_; }

 private:
  GpuReserve() = default;
  pid_t pid_ = -1;
  int to_helper_ = -1;  // its stdin: closed, it frees and exits
  std::optional<ReserveHeld> held_;
  std::string problem_;
};

}  // namespace memsweep::runner::detail
