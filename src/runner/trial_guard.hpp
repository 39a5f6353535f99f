#pragma once
// The trial guard: a small process of the rank's own (`memsweep guard`, an
// exec of the memsweep binary) that outlives the rank by moments, to end
// what the rank can no longer end (docs/runner.md, "When the rank dies").
//
// A trial process dies with its rank (PR_SET_PDEATHSIG), but a program's
// children do not: the death signal is not inherited, and with the program
// and the rank gone they are reparented to init, out of every tree memsweep
// knows. Nothing of the rank runs after a SIGKILL, so the guard, told what
// each trial is while it runs, notices the rank's death (the end of its
// socket) and kills the trial's process group, every process it saw in the
// trial's tree and every process in the trial's cgroup, then removes the
// cgroup. Told where the rank makes its trial groups, it also removes every
// group named as the rank's (cgroup_files.hpp, memsweep_group_owner): the
// rank may die between making a trial's group and telling the guard of it.
// It is in a session of its own, so that the kill of the rank's
// process group (mpirun's, a terminal's Ctrl-C) does not take it too.

#include "common/unique_fd.hpp"

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace memsweep::runner::detail {

// What the guard ends if the rank dies while the trial runs.
struct GuardedTrial {
  pid_t root = -1;               // the trial's process
  bool own_group = false;        // root leads a process group of its own (a program)
  std::filesystem::path cgroup;  // the trial's cgroup folder; empty: none
};

class TrialGuard {
 public:
  // Starts the guard from `executable` (the memsweep binary). nullopt when
  // it cannot start (a test's runner with no such binary): trials run as
  // before, unguarded. A guard that dies later (a kill -9 of it alone) is
  // noticed at once, by a thread of the rank's that waits on the socket's
  // end: another is started and told what the dead one knew (the folder of
  // the rank's groups, the trial running now), with one line on stderr;
  // where none can start, one line says the rank's trials are unguarded
  // from then on.
  static std::optional<TrialGuard> start(const std::string& executable);
  TrialGuard(TrialGuard&& other) noexcept;
  TrialGuard& operator=(TrialGuard&&) = delete;
  TrialGuard(const TrialGuard&) = delete;
  // Tells the guard to end, ending nothing, and reaps it.
  ~TrialGuard();

  // The guard's process now (another after a restart); -1 when none guards.
  pid_t pid() const;
  // How many guards were started after the first died.
  int restarts() const;
  // Never throws: a guard that died only stops guarding until its successor starts.
  void watch(const GuardedTrial& trial) noexcept;
  // Where the rank makes its trial groups (TrialCgroups::parent()).
  void watch_groups_under(const std::filesystem::path& parent) noexcept;
  // The trial is over and the rank has cleaned up after it.
  void release() noexcept;

  struct State;  // shared with the thread that notices the guard's death

 private:
  explicit TrialGuard(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// At most this many guards are started after the first one died: a guard
// that cannot stay alive is not restarted for ever.
inline constexpr int kMaxGuardRestarts = 10;

// Pure: how the rank names itself on stderr ("rank 3 (pid 4242)"): its
// MPI rank from the launcher's environment (Open MPI, PMI, PMIx, Slurm),
// else "memsweep (pid N)".
std::string rank_label(const std::function<const char*(const char*)>& environment, pid_t pid);
// Pure: a wait status as a note says it ("was killed by signal 9 (Killed)").
std::string guard_end_text(int wait_status);

// Pure: the line the rank sends for `trial`, and the trial a line names
// (nullopt for a line that names none, "release" included).
std::string guard_watch_line(const GuardedTrial& trial);
std::optional<GuardedTrial> parse_guard_watch_line(const std::string& line);
// Pure: the line naming the folder of the rank's trial groups, and back.
// The rank names itself: a guard that starts slowly (a sanitizer's build)
// may find its parent dead already, and getppid() then names init.
struct RankGroups {
  pid_t rank = -1;
  std::filesystem::path parent;
};
std::string guard_groups_line(const RankGroups& groups);
std::optional<RankGroups> parse_guard_groups_line(const std::string& line);

}  // namespace memsweep::runner::detail
