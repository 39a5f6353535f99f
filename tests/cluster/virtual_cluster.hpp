#pragma once
// A Slurm cluster of several nodes on this one host, for tests of what
// happens across nodes and when nodes fail: a head (slurmctld, the login
// node) and compute nodes n1..nN (slurmd), each in namespaces of its own
// (network, host name, mounts, IPC; a node also its own processes) and, a
// node, in a cgroup of its own, joined by a bridge on a private subnet with
// no way out. The build, source and cluster folders look the same on every
// node; /dev/shm, /tmp and /run are each node's own. A test can kill a node
// (a power loss), cut its link, freeze it, and boot it again; stop() ends
// exactly what the cluster made, whatever the test did.

#include "support/background_process.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace memsweep::testing {

struct VirtualClusterOptions {
  int nodes = 3;  // named n1..nN
  int cpus_per_node = 2;
  long memory_mib_per_node = 3072;  // RealMemory, and the node cgroup's memory limit
  // More folders that must look the same on every node and the head (the
  // build, source, cluster and scratch folders always do).
  std::vector<std::filesystem::path> shared_paths;
};

// What the constructor throws when this machine cannot host the cluster
// (not root, no namespaces, Slurm, munge or iproute2 missing): the tests
// skip, or fail in CI (MEMSWEEP_SKIP_OR_FAIL_IN_CI).
class ClusterUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class VirtualCluster {
 public:
  // Brings the head and every node up and waits until sinfo shows every
  // node idle; throws ClusterUnavailable (see above), or std::runtime_error
  // with logs() when the cluster does not come up.
  explicit VirtualCluster(VirtualClusterOptions options = {});
  ~VirtualCluster();  // stop()
  VirtualCluster(const VirtualCluster&) = delete;
  VirtualCluster& operator=(const VirtualCluster&) = delete;

  // Cancels the jobs, ends every node (all of its processes at once), the
  // daemons, any process carrying the cluster's marker and the head, and so
  // every namespace, link and mount the cluster made; removes its cgroups.
  // Also after kill, cut or freeze. Idempotent.
  void stop();

  std::vector<std::string> nodes() const;  // "n1".."nN"

  // What a command needs to talk to this cluster (SLURM_CONF), the marker
  // every process and job of the cluster carries, and the Open MPI settings
  // that keep its traffic on the cluster's subnet.
  std::map<std::string, std::string> environment() const;

  // Runs a program (looked up on PATH) on the head, the login node: in its
  // network, mount and host-name namespaces, with environment(). The
  // working folder is the test's own when none is given.
  CommandResult run(const std::vector<std::string>& argv, const std::filesystem::path& working_dir = {},
                    const std::map<std::string, std::string>& extra_environment = {}) const;
  // The same inside a node's namespaces (its processes, its cgroup too).
  CommandResult run_on(const std::string& node, const std::vector<std::string>& argv,
                       const std::filesystem::path& working_dir = {},
                       const std::map<std::string, std::string>& extra_environment = {}) const;
  // A long-running program on the head (`memsweep watch`, salloc ... mpirun),
  // its output in a folder of the cluster's. Its pid is the program's own:
  // a signal to it reaches the program.
  std::unique_ptr<BackgroundProcess> start_on_head(
      const std::vector<std::string>& argv, const std::filesystem::path& working_dir = {},
      const std::map<std::string, std::string>& extra_environment = {}) const;

  // A node's failures. kill: every process of the node at once (SIGKILL of
  // its PID namespace's first process), as a power loss; returns once none
  // is left, and the node stays down until restart(). freeze / thaw:
  // SIGSTOP / SIGCONT to every process of it. cut / restore: its link down
  // / up, its processes running on. restart: boots it again (after kill, or
  // kills it first): fresh namespaces, /dev/shm, /tmp and /run, munged and
  // slurmd; returns once its slurmd has registered with slurmctld.
  void kill(const std::string& node);
  void freeze(const std::string& node);
  void thaw(const std::string& node);
  void cut(const std::string& node);
  void restore(const std::string& node);
  void restart(const std::string& node);

  // sinfo's state of the node (idle, alloc, mix, down*, idle*, ...); empty
  // when slurmctld does not answer.
  std::string node_state(const std::string& node) const;
  // Polls node_state() until `state_ok` holds or `timeout` passes.
  bool wait_for_node(const std::string& node, const std::function<bool(const std::string&)>& state_ok,
                     std::chrono::seconds timeout) const;

  // The host pids of every process in the node's PID namespace (none after kill).
  std::vector<pid_t> processes_on(const std::string& node) const;
  // The node a host pid runs on, or "" when it is on none.
  std::string node_of(pid_t pid) const;
  // /proc/<the node's first process>/root: its /dev/shm, /tmp, /run seen
  // from the host. Empty while the node is killed.
  std::filesystem::path node_root(const std::string& node) const;
  // The node's cgroup (empty when it could not be made: logs() says why).
  std::filesystem::path node_cgroup(const std::string& node) const;

  // `scontrol show job ID` as fields (JobState, ExitCode, Restarts, NodeList,
  // ...); for an array job, its tasks. Empty when Slurm does not know it.
  std::map<std::string, std::string> job(const std::string& id) const;
  std::vector<std::map<std::string, std::string>> jobs(const std::string& id) const;
  // Waits until every job of `id` has ended; returns false on timeout.
  bool wait_for_jobs(const std::string& id, std::chrono::seconds timeout) const;

  const VirtualClusterOptions& options() const { return options_; }
  const std::filesystem::path& folder() const { return dir_.path(); }
  // A folder every node and the head see, for the tests' work folders.
  const std::filesystem::path& scratch() const { return scratch_; }
  std::chrono::duration<double> bring_up_time() const { return bring_up_time_; }
  std::chrono::duration<double> last_restart_time() const { return last_restart_time_; }
  // The last lines of every daemon's log and what the cluster noted (a
  // cgroup it could not make), for failure messages.
  std::string logs() const;

 private:
  struct Node {
    std::string name;
    std::string address;
    int boots = 0;
    std::unique_ptr<BackgroundProcess> boot;  // unshare, the parent of the node's first process
    pid_t init = 0;                           // that first process (host pid); 0 while killed
    std::string pid_namespace;                // its /proc/PID/ns/pid link ("pid:[...]")
    std::string link;                         // the cable's end on the head's bridge
    std::filesystem::path cgroup;
  };

  void write_files() const;
  void make_cgroups();
  void start_head();
  void boot(Node& node);
  void plug_in(Node& node);
  void wait_until_registered(const Node& node, const std::string& slurmd_started_before) const;
  bool all_nodes_idle() const;
  std::string slurmd_start_time(const std::string& node) const;
  void end_node(Node& node);
  void remove_cgroups();
  void note(const std::string& what);
  void set_link(const Node& node, const std::string& state) const;
  void signal_node(const std::string& node, int signal) const;
  Node& node_named(const std::string& name);
  const Node& node_named(const std::string& name) const;
  std::vector<std::string> on_head(const std::vector<std::string>& argv,
                                   const std::filesystem::path& working_dir) const;
  std::map<std::string, std::string> environment_with(const std::map<std::string, std::string>& extra) const;
  std::map<std::string, std::string> boot_environment(const Node* node) const;

  VirtualClusterOptions options_;
  TempDir dir_;
  std::filesystem::path scratch_;
  std::filesystem::path conf_;
  std::vector<std::filesystem::path> shared_;
  std::unique_ptr<BackgroundProcess> head_;  // its pid is the head's namespaces' holder
  std::unique_ptr<BackgroundProcess> head_munged_;
  std::unique_ptr<BackgroundProcess> slurmctld_;
  std::vector<Node> nodes_;
  std::filesystem::path cgroup_;  // the cluster's group, the nodes' groups below it
  std::vector<std::string> notes_;
  mutable int commands_started_ = 0;
  std::chrono::duration<double> bring_up_time_{0};
  std::chrono::duration<double> last_restart_time_{0};
  bool stopped_ = false;
};

}  // namespace memsweep::testing
