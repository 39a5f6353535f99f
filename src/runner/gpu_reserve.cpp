#include "runner/gpu_reserve.hpp"

#include "common/unique_fd.hpp"
#include "memsweep/training_runner.hpp"

#include <fmt/format.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

extern char** environ;

namespace memsweep::runner::detail {
namespace {

// The CUDA driver's few calls, declared here from cuda.h (CUresult is an
// int-sized enum, CUdevice an int, CUdeviceptr an unsigned 64-bit integer).
struct CudaApi {
  int (*init)(unsigned int) = nullptr;                         // cuInit
  int (*device_get)(int*, int) = nullptr;                      // cuDeviceGet
  int (*context_create)(void**, unsigned int, int) = nullptr;  // cuCtxCreate_v2
  int (*memory_info)(std::size_t*, std::size_t*) = nullptr;    // cuMemGetInfo_v2
  int (*allocate)(std::uint64_t*, std::size_t) = nullptr;      // cuMemAlloc_v2
  int (*error_string)(int, const char**) = nullptr;            // cuGetErrorString
  std::string describe(int code) const {
    const char* text = nullptr;
    if (error_string != nullptr) error_string(code, &text);
    return text != nullptr ? fmt::format("CUDA error {} ({})", code, text) : fmt::format("CUDA error {}", code);
  }
};
constexpr int kCudaSuccess = 0;

// Allocations are made in pieces: one of a whole device's size may fail
// where pieces fit; a piece that does not fit is halved, down to this.
constexpr std::uint64_t kLargestPiece = std::uint64_t{1} << 30;
constexpr std::uint64_t kSmallestPiece = std::uint64_t{2} << 20;

template <typename Function>
bool find(void* handle, const char* name, Function& out) {
  out = reinterpret_cast<Function>(::dlsym(handle, name));
  return out != nullptr;
}

[[noreturn]] void fail(const std::string& problem) {
  std::printf("error %s\n", problem.c_str());
  std::fflush(stdout);
  std::_Exit(1);
}

// The helper's answer: "reserved N free M", or "error TEXT".
std::optional<ReserveHeld> parse_answer(std::string_view line, std::string& problem) {
  unsigned long long reserved = 0, free_after = 0;
  if (std::sscanf(std::string(line).c_str(), "reserved %llu free %llu", &reserved, &free_after) == 2)
    return ReserveHeld{reserved, free_after};
  problem = line.starts_with("error ") ? std::string(line.substr(6)) : fmt::format("answered \"{}\"", line);
  return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> reserve_bytes(std::uint64_t free_bytes, std::uint64_t limit) {
  if (free_bytes < limit) return std::nullopt;
  return free_bytes - limit;
}

GpuReserve GpuReserve::start(const std::string& executable, const std::string& visible_id, std::uint64_t limit) {
  GpuReserve reserve;
  int to_helper[2], from_helper[2];
  if (::pipe2(to_helper, O_CLOEXEC) != 0) {
    reserve.problem_ = "no pipe for the GPU reserve";
    return reserve;
  }
  if (::pipe2(from_helper, O_CLOEXEC) != 0) {
    ::close(to_helper[0]);
    ::close(to_helper[1]);
    reserve.problem_ = "no pipe for the GPU reserve";
    return reserve;
  }
  const UniqueFd helper_in(to_helper[0]), answers(from_helper[0]), helper_out(from_helper[1]);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, helper_in.get(), STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, helper_out.get(), STDOUT_FILENO);
  std::vector<std::string> environment{fmt::format("CUDA_VISIBLE_DEVICES={}", visible_id)};
  for (char** entry = environ; *entry != nullptr; ++entry)
    if (!std::string_view(*entry).starts_with("CUDA_VISIBLE_DEVICES=")) environment.emplace_back(*entry);
  std::vector<char*> envp;
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::string limit_text = std::to_string(limit);
  char* argv[] = {const_cast<char*>("memsweep"), const_cast<char*>("gpu-reserve"), limit_text.data(), nullptr};
  const int error = ::posix_spawn(&reserve.pid_, executable.c_str(), &actions, nullptr, argv, envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    reserve.pid_ = -1;
    reserve.problem_ = fmt::format("the GPU reserve could not be started: {}", std::strerror(error));
    ::close(to_helper[1]);
    return reserve;
  }
  reserve.to_helper_ = to_helper[1];
  // Its answer, one line, or its end.
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + kReserveStartTimeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      reserve.problem_ = fmt::format("the GPU reserve did not answer within {} s", kReserveStartTimeout.count());
      return reserve;
    }
    pollfd ready{answers.get(), POLLIN, 0};
    const int polled = ::poll(&ready, 1, static_cast<int>(left.count()));
    if (polled < 0 && errno == EINTR) continue;
    if (polled <= 0) continue;
    char buffer[256];
    const ssize_t got = ::read(answers.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    line.append(buffer, static_cast<std::size_t>(got));
    if (line.find('\n') != std::string::npos) break;
  }
  line = line.substr(0, line.find('\n'));
  if (line.empty()) {
    reserve.problem_ = "the GPU reserve ended without an answer";
    return reserve;
  }
  reserve.held_ = parse_answer(line, reserve.problem_);
  return reserve;
}

GpuReserve::GpuReserve(GpuReserve&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      to_helper_(std::exchange(other.to_helper_, -1)),
      held_(std::move(other.held_)),
      problem_(std::move(other.problem_)) {}

GpuReserve::~GpuReserve() {
  if (to_helper_ >= 0) ::close(to_helper_);
  if (pid_ <= 0) return;
  // It exits at the pipe's end; one that hangs in the driver is killed.
  int status = 0;
  for (int waited = 0; waited < 5000; ++waited) {
    const pid_t got = ::waitpid(pid_, &status, WNOHANG);
    if (got == pid_ || (got < 0 && errno != EINTR)) return;
    ::usleep(1000);
  }
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace memsweep::runner::detail

namespace memsweep {

void run_gpu_reserve_process(const char* limit_text) {
  using namespace runner::detail;
  char* end = nullptr;
  const unsigned long long limit = std::strtoull(limit_text, &end, 10);
  if (end == limit_text || *end != '\0') fail(fmt::format("not a limit in bytes: \"{}\"", limit_text));
  const char* override_path = std::getenv(kCudaLibraryVariable);
  const char* path = override_path != nullptr && *override_path != '\0' ? override_path : kCudaLibraryName;
  void* handle = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) fail(fmt::format("no CUDA driver ({} not found)", path));
  CudaApi cuda;
  if (!(find(handle, "cuInit", cuda.init) && find(handle, "cuDeviceGet", cuda.device_get) &&
        find(handle, "cuCtxCreate_v2", cuda.context_create) && find(handle, "cuMemGetInfo_v2", cuda.memory_info) &&
        find(handle, "cuMemAlloc_v2", cuda.allocate)))
    fail(fmt::format("{} lacks a function the reserve needs", path));
  find(handle, "cuGetErrorString", cuda.error_string);
  int device = 0;
  void* context = nullptr;
  if (const int code = cuda.init(0); code != kCudaSuccess) fail(fmt::format("cuInit: {}", cuda.describe(code)));
  if (const int code = cuda.device_get(&device, 0); code != kCudaSuccess)
    fail(fmt::format("cuDeviceGet: {}", cuda.describe(code)));
  if (const int code = cuda.context_create(&context, 0, device); code != kCudaSuccess)
    fail(fmt::format("cuCtxCreate: {}", cuda.describe(code)));
  std::size_t free_bytes = 0, total = 0;
  if (const int code = cuda.memory_info(&free_bytes, &total); code != kCudaSuccess)
    fail(fmt::format("cuMemGetInfo: {}", cuda.describe(code)));
  const std::optional<std::uint64_t> wanted = reserve_bytes(free_bytes, limit);
  if (!wanted)
    fail(fmt::format("the device has {} bytes free, less than the limit of {}: other processes use it", free_bytes,
                     limit));
  std::uint64_t held = 0;
  std::uint64_t piece = kLargestPiece;
  while (held < *wanted) {
    std::uint64_t pointer = 0;
    const std::uint64_t size = std::min(piece, *wanted - held);
    const int code = cuda.allocate(&pointer, size);
    if (code == kCudaSuccess) {
      held += size;
    } else if (piece > kSmallestPiece) {
      piece /= 2;
    } else {
      break;  // what is left is less than a piece, or taken meanwhile
    }
  }
  cuda.memory_info(&free_bytes, &total);
  std::printf("reserved %llu free %llu\n", static_cast<unsigned long long>(held),
              static_cast<unsigned long long>(free_bytes));
  std::fflush(stdout);
  // Held until the rank closes the pipe (or dies); the exit frees it all.
  for (char ignored[64];;) {
    const ssize_t got = ::read(STDIN_FILENO, ignored, sizeof ignored);
    if (got > 0 || (got < 0 && errno == EINTR)) continue;
    std::_Exit(0);
  }
}

}  // namespace memsweep
