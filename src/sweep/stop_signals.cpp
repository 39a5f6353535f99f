#include "memsweep/stop_signals.hpp"

#include <cerrno>
#include <csignal>
#include <mutex>
#include <string>
#include <system_error>

namespace memsweep {
namespace {

// A signal handler may only touch lock-free atomics and volatile
// sig_atomic_t; a std::atomic<bool> that needed a lock could deadlock with
// the thread it interrupted.
static_assert(std::atomic<bool>::is_always_lock_free, "the stop flag must be lock-free to be set from a handler");

std::atomic<bool> g_stop_requested{false};
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int signal_number) {
  // The first signal is the one to report (SIGUSR1 then SIGTERM: Slurm's
  // warning, then the time limit).
  if (g_stop_signal == 0) g_stop_signal = signal_number;
  g_stop_requested.store(true);
}

void install(int signal_number, int extra_flags) {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESTART: a read or write the signal lands in resumes instead of
  // failing with EINTR deep inside HDF5 or MPI.
  action.sa_flags = SA_RESTART | extra_flags;
  if (::sigaction(signal_number, &action, nullptr) != 0) {
    throw std::system_error(errno, std::generic_category(),
                            "cannot install the handler for signal " + std::to_string(signal_number));
  }
}

}  // namespace

const std::atomic<bool>& install_stop_signals() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    install(SIGTERM, 0);
    install(SIGUSR1, 0);
    // SA_RESETHAND: the handler runs once, then SIGINT's default action is
    // back, so a second Ctrl-C ends a sweep that is slow to stop.
    install(SIGINT, SA_RESETHAND);
  });
  return g_stop_requested;
}

int stop_signal_number() { return static_cast<int>(g_stop_signal); }

}  // namespace memsweep
