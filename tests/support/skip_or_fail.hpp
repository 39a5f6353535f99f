#pragma once
// What a test does when this machine lacks what it needs (root, a memory
// cgroup, tmux, the shared files, a dataset): in CI it fails, since there
// the machine is set up to have it and a skip would hide that nothing was
// tested; elsewhere it is skipped, loudly, so that the skip is not lost
// among hundreds of passing tests.

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

namespace memsweep::testing {

// True when the environment variable CI is "true" (GitHub Actions, GitLab CI).
inline bool running_in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string_view(ci) == "true";
}

inline void announce_skip(const std::string& why) { std::cerr << "\n*** SKIPPED: " << why << " ***\n" << std::endl; }

}  // namespace memsweep::testing

// Ends the test (or its SetUp) because of `why`, a std::string: FAIL when
// CI=true, else a skip announced on stderr.
#define MEMSWEEP_SKIP_OR_FAIL_IN_CI(why)                                                                   \
  do {                                                                                                     \
    const std::string memsweep_skip_reason = (why);                                                        \
    if (::memsweep::testing::running_in_ci()) FAIL() << memsweep_skip_reason << " (CI=true: it must run)"; \
    ::memsweep::testing::announce_skip(memsweep_skip_reason);                                              \
    GTEST_SKIP() << memsweep_skip_reason;                                                                  \
  } while (false)
