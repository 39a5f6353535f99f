// The stop signals, raised for real. ctest runs each test in a process of
// its own (the flag is never cleared).

#include "memsweep/stop_signals.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

namespace memsweep {
namespace {

TEST(StopSignals, NothingBeforeASignal) {
  const std::atomic<bool>& flag = install_stop_signals();
  EXPECT_FALSE(flag.load());
  EXPECT_EQ(stop_signal_number(), 0);
  EXPECT_EQ(&flag, &install_stop_signals()) << "installing twice gives the same flag";
}

TEST(StopSignals, SigtermSetsTheFlag) {
  const std::atomic<bool>& flag = install_stop_signals();
  ASSERT_EQ(::raise(SIGTERM), 0);
  EXPECT_TRUE(flag.load());
  EXPECT_EQ(stop_signal_number(), SIGTERM);
}

TEST(StopSignals, Sigusr1FromAnotherThreadOfDeliverySetsTheFlag) {
  const std::atomic<bool>& flag = install_stop_signals();
  ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
  // kill() to the process may be handled by any thread, a little later.
  for (int i = 0; i < 1000 && !flag.load(); ++i) ::usleep(1000);
  EXPECT_TRUE(flag.load());
  EXPECT_EQ(stop_signal_number(), SIGUSR1);
}

TEST(StopSignals, TheFirstSignalIsTheOneReported) {
  install_stop_signals();
  ASSERT_EQ(::raise(SIGUSR1), 0);
  ASSERT_EQ(::raise(SIGTERM), 0);
  EXPECT_EQ(stop_signal_number(), SIGUSR1);
}

TEST(StopSignals, SigintHandlerRunsOnceSoASecondCtrlCKills) {
  const std::atomic<bool>& flag = install_stop_signals();
  struct sigaction installed {};
  ASSERT_EQ(::sigaction(SIGINT, nullptr, &installed), 0);
  EXPECT_NE(installed.sa_handler, SIG_DFL);
  ASSERT_EQ(::raise(SIGINT), 0);
  EXPECT_TRUE(flag.load());
  EXPECT_EQ(stop_signal_number(), SIGINT);
  struct sigaction after {};
  ASSERT_EQ(::sigaction(SIGINT, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, SIG_DFL);
  // SIGTERM keeps its handler.
  ASSERT_EQ(::sigaction(SIGTERM, nullptr, &after), 0);
  EXPECT_NE(after.sa_handler, SIG_DFL);
}

}  // namespace
}  // namespace memsweep
