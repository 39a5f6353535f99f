#include "support/cgroups.hpp"

#include <fmt/format.h>

#include <signal.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace memsweep::testing {

namespace fs = std::filesystem;

std::optional<fs::path> own_memory_group() {
  std::ifstream file("/proc/self/cgroup");
  std::optional<fs::path> v1;
  std::optional<fs::path> v2;
  for (std::string line; std::getline(file, line);) {
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (line.starts_with("0::") && fs::exists(fs::path("/sys/fs/cgroup") / path.substr(1) / "memory.max"))
      v2 = fs::path("/sys/fs/cgroup") / path.substr(1);
    std::stringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');)
      if (name == "memory") v1 = fs::path("/sys/fs/cgroup/memory") / path.substr(1);
  }
  return v2 ? v2 : v1;
}

std::vector<fs::path> trial_groups_of(const fs::path& parent, const std::vector<pid_t>& ranks) {
  std::vector<fs::path> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(parent, error))
    for (const pid_t rank : ranks)
      if (entry.path().filename().string().starts_with(fmt::format("memsweep-{}-trial-", rank)))
        found.push_back(entry.path());
  return found;
}

std::vector<fs::path> trial_groups_of_dead_ranks(const fs::path& parent) {
  std::vector<fs::path> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(parent, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("memsweep-") || name.find("-trial-") == std::string::npos) continue;
    const std::string pid = name.substr(9, name.find("-trial-") - 9);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH) found.push_back(entry.path());
  }
  return found;
}

std::vector<fs::path> trial_groups_of_dead_ranks_left_after(const fs::path& parent,
                                                            std::chrono::milliseconds patience) {
  const auto give_up = std::chrono::steady_clock::now() + patience;
  for (;;) {
    std::vector<fs::path> left = trial_groups_of_dead_ranks(parent);
    if (left.empty() || std::chrono::steady_clock::now() >= give_up) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace memsweep::testing
