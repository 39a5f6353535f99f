#include "runner/test_hooks.hpp"

#include "memsweep/byte_size.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace memsweep::runner::detail {

std::optional<TrialHook> parse_test_hook(std::string_view spec, std::string_view trial_id) {
  std::optional<TrialHook> found;
  while (!spec.empty()) {
    const std::size_t end = spec.find(';');
    const std::string_view entry = spec.substr(0, end);
    spec = end == std::string_view::npos ? std::string_view() : spec.substr(end + 1);
    const std::size_t colon = entry.find(':');
    if (colon == std::string_view::npos)
      throw std::invalid_argument(std::string(kTestHookEnvVar) + ": expected TRIAL_ID:ACTION, got \"" +
                                  std::string(entry) + "\"");
    const std::string_view id = entry.substr(0, colon);
    const std::string_view action = entry.substr(colon + 1);
    TrialHook hook;
    if (action == "hang") {
      hook.hang = true;
    } else if (action.starts_with("allocate=")) {
      const auto bytes = parse_byte_size(action.substr(9));
      if (!bytes)
        throw std::invalid_argument(std::string(kTestHookEnvVar) + ": bad size in \"" + std::string(action) + "\"");
      hook.allocate_bytes = *bytes;
    } else {
      throw std::invalid_argument(std::string(kTestHookEnvVar) + ": unknown action \"" + std::string(action) +
                                  "\" (hang, allocate=BYTES)");
    }
    if (id == "*" || id == trial_id) found = hook;
  }
  return found;
}

std::optional<TrialHook> test_hook_for(std::string_view trial_id) {
  const char* spec = std::getenv(std::string(kTestHookEnvVar).c_str());
  if (spec == nullptr || *spec == '\0') return std::nullopt;
  return parse_test_hook(spec, trial_id);
}

void run_test_hook(const TrialHook& hook) {
  if (hook.allocate_bytes > 0) {
    constexpr std::uint64_t kStep = 16ULL << 20;
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    for (std::uint64_t done = 0; done < hook.allocate_bytes; done += kStep) {
      void* block = ::mmap(nullptr, kStep, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (block == MAP_FAILED) break;
      for (std::uint64_t at = 0; at < kStep; at += page) static_cast<volatile char*>(block)[at] = 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  while (hook.hang) ::pause();
}

}  // namespace memsweep::runner::detail
