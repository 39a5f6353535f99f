#include "sweep/launcher_watch.hpp"

#include "memsweep/error.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace memsweep {

LauncherWatch::LauncherWatch(int rank, std::chrono::milliseconds interval)
    : launcher_(::getppid()), thread_([this, rank, interval] { watch(rank, interval); }) {}

LauncherWatch::~LauncherWatch() {
  done_ = true;
  thread_.join();
}

void LauncherWatch::watch(int rank, std::chrono::milliseconds interval) {
  // Short naps, so that the destructor does not wait a whole interval.
  constexpr auto kNap = std::chrono::milliseconds(50);
  auto next = std::chrono::steady_clock::now() + interval;
  while (!done_) {
    std::this_thread::sleep_for(kNap);
    if (std::chrono::steady_clock::now() < next) continue;
    next += interval;
    if (::getppid() == launcher_) continue;
    fmt::print(stderr, "memsweep: rank {}: its launcher (process {}) is gone, so is the job: ending (exit status {})\n",
               rank, launcher_, exit_status::kFailure);
    std::fflush(stderr);
    std::_Exit(exit_status::kFailure);
  }
}

}  // namespace memsweep
