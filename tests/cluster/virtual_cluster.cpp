#include "cluster/virtual_cluster.hpp"

#include "slurm/slurm_cluster.hpp"
#include "support/file_text.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

namespace memsweep::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Every process the cluster starts, and every job it runs, carries this
// variable (= the cluster's folder), so that stop() can find them all and
// nothing else.
constexpr const char* kMarker = "MEMSWEEP_TEST_VIRTUAL_CLUSTER";

// The cluster's subnet exists only inside its namespaces (the head's bridge,
// the nodes' links), with no default route anywhere: no packet leaves it.
constexpr const char* kSubnet = "10.213.0.0/24";
constexpr const char* kHeadAddress = "10.213.0.1";
std::string node_address(int index) { return fmt::format("10.213.0.{}", 10 + index); }

// What each machine has of its own, a fresh tmpfs per boot; the rest of the
// host's filesystems it sees as they are.
const std::vector<fs::path> kNodePrivate{"/dev/shm", "/tmp", "/run"};
// The head is the login node: a test's own folders under /tmp stay visible
// there; munged's socket in /run is its own.
const std::vector<fs::path> kHeadPrivate{"/run"};

constexpr const char* kMungeSocket = "/run/munge/munge.socket.2";

// The first process of each machine (a node's PID 1, or the head's holder
// of its namespaces), started by unshare in the namespaces made for it.
// The host plugs a node's cable in (a veth whose far end is on the head's
// bridge) once the node's network namespace exists, and says so with the
// file VC_CABLE.
constexpr const char* kBootScript = R"(#!/bin/bash
# A machine of a VirtualCluster (tests/cluster/virtual_cluster.cpp).
set -u
role=$1 name=$2
say() { echo "$name: $*" >&2; }
fail() { say "$*"; exit 1; }

# First of all, so that everything the node starts is in it.
if [ -n "${VC_CGROUP:-}" ]; then
  echo $$ > "$VC_CGROUP/cgroup.procs" || say "cannot join the cgroup $VC_CGROUP: running outside it"
fi
hostname "$name" || fail "cannot set the host name"
ip link set lo up || fail "cannot bring loopback up"

# The shared folders that the private filesystems below would hide: held
# open now, mounted back at the same path once hidden.
held=()
while IFS= read -r path; do
  [ -n "$path" ] || continue
  exec {fd}<"$path" || fail "cannot open the shared folder $path"
  held+=("$fd $path")
done <<< "${VC_BIND_BACK:-}"
for dir in $VC_PRIVATE; do
  mode=1777
  [ "$dir" = /run ] && mode=0755
  mount -t tmpfs -o "mode=$mode" "memsweep-vcluster-$name" "$dir" || fail "cannot mount a tmpfs on $dir"
done
for entry in "${held[@]}"; do
  fd=${entry%% *} path=${entry#* }
  # Not canonicalised: the fd's path now names the folder in the tmpfs.
  mkdir -p "$path" && mount --no-canonicalize --bind "/proc/self/fd/$fd" "$path" || fail "cannot mount $path back"
  exec {fd}<&-
done
mount --bind "$VC_FOLDER/hosts" /etc/hosts || fail "cannot mount the cluster's hosts file"
mkdir -m 0755 /run/munge || fail "cannot make /run/munge"

if [ "$role" = head ]; then
  ip link add br0 type bridge && ip addr add "$VC_ADDRESS/24" dev br0 && ip link set br0 up ||
    fail "cannot make the bridge"
  touch "$VC_READY" || fail "cannot write $VC_READY"
  # The head's namespaces last as long as this process: the host enters them by its pid.
  exec sleep infinity
fi

until [ -e "$VC_CABLE" ]; do sleep 0.05; done
ip addr add "$VC_ADDRESS/24" dev eth0 && ip link set eth0 up || fail "cannot bring eth0 up"
"$VC_MUNGED" --foreground --force --key-file="$VC_FOLDER/munge.key" --seed-file=/run/munge/munged.seed \
  --log-file="$VC_LOG/munged.log" &
for (( i = 0; i < 200; ++i )); do
  [ -S /run/munge/munge.socket.2 ] && break
  sleep 0.05
done
[ -S /run/munge/munge.socket.2 ] || fail "munged did not create its socket within 10 s"
"$VC_SLURMD" -D -N "$name" -f "$SLURM_CONF" &
# The node's PID 1 from here on: it reaps what the jobs orphan, until the node is killed.
while :; do
  sleep infinity &
  wait $!
done
)";

std::string last_lines(const std::string& text, std::size_t count) {
  std::size_t start = text.size();
  for (std::size_t seen = 0; start > 0 && seen <= count; --start)
    if (text[start - 1] == '\n') ++seen;
  return text.substr(start);
}

std::string trimmed(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\n") - first + 1);
}

bool process_alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

// The state letter of /proc/PID/stat (R, S, T, Z, ...); 0 when it is gone.
char process_state(pid_t pid) {
  const std::string stat = slurp(fmt::format("/proc/{}/stat", pid));
  const std::size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() ? stat[close + 2] : '\0';
}

// Every pid in /proc (the host's PID namespace holds them all).
std::vector<pid_t> all_pids() {
  std::vector<pid_t> pids;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos)
      pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

// The PID namespace of a process, as its /proc link reads ("pid:[4026532...]").
std::string pid_namespace_of(pid_t pid) {
  std::error_code error;
  const fs::path link = fs::read_symlink(fmt::format("/proc/{}/ns/pid", pid), error);
  return error ? std::string() : link.string();
}

pid_t child_of(pid_t parent) {
  for (const pid_t pid : all_pids())
    if (parent_of(pid) == parent) return pid;
  return 0;
}

// A write(2) of the whole text: cgroup files answer a refused value with an
// error of the write itself, which a buffered stream would hide.
bool write_text(const fs::path& file, const std::string& text) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return written;
}

// Whether `path` is `folder` or lies below it (both absolute, canonical).
bool inside(const fs::path& path, const fs::path& folder) {
  auto [folder_end, path_at] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return folder_end == folder.end();
}

// The shared folders that `private_dirs` would hide, parents before
// children, leaving out those below another (mounted back with it).
std::vector<fs::path> hidden_shared(const std::vector<fs::path>& shared, const std::vector<fs::path>& private_dirs) {
  std::vector<fs::path> hidden;
  for (const fs::path& path : shared)
    if (std::any_of(private_dirs.begin(), private_dirs.end(), [&](const fs::path& dir) { return inside(path, dir); }))
      hidden.push_back(path);
  std::sort(hidden.begin(), hidden.end());
  std::vector<fs::path> outermost;
  for (const fs::path& path : hidden)
    if (outermost.empty() || !inside(path, outermost.back())) outermost.push_back(path);
  return outermost;
}

std::string joined(const std::vector<fs::path>& paths, char separator) {
  std::string text;
  for (const fs::path& path : paths) text += path.string() + separator;
  return text;
}

// Where the nodes' cgroups go: below this process's own memory group on
// cgroup v1 (where memsweep's trial groups go too, inside any limit this
// process runs under), at the root of the unified hierarchy on v2 (the one
// group that may have processes and still hand the memory controller on).
std::optional<fs::path> cgroup_parent() {
  if (fs::exists("/sys/fs/cgroup/memory/cgroup.procs")) {
    std::ifstream file("/proc/self/cgroup");
    for (std::string line; std::getline(file, line);) {
      const auto first = line.find(':');
      const auto second = line.find(':', first + 1);
      if (first == std::string::npos || second == std::string::npos) continue;
      std::stringstream controllers(line.substr(first + 1, second - first - 1));
      for (std::string name; std::getline(controllers, name, ',');)
        if (name == "memory") return fs::path("/sys/fs/cgroup/memory") / line.substr(second + 2);
    }
    return fs::path("/sys/fs/cgroup/memory");
  }
  if (fs::exists("/sys/fs/cgroup/cgroup.controllers")) return fs::path("/sys/fs/cgroup");
  return std::nullopt;
}

// Removes a cgroup and the groups below it, deepest first (rmdir: a cgroup's
// files cannot be deleted, its folder goes when no process is left in it).
void remove_cgroup_tree(const fs::path& group) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(group, error))
    if (entry.is_directory(error)) remove_cgroup_tree(entry.path());
  ::rmdir(group.c_str());
}

// The groups of clusters whose test process was killed outright (a SIGKILL
// skips stop()): empty, so rmdir takes them. A live cluster's node groups
// hold their nodes' processes, which rmdir refuses, and clusters run one at
// a time (the tests' RESOURCE_LOCK virtual_cluster).
void remove_abandoned_groups(const fs::path& parent) {
  std::error_code error;
  for (fs::directory_iterator entry(parent, error), end; !error && entry != end; entry.increment(error))
    if (entry->path().filename().string().rfind("memsweep-vcluster-", 0) == 0) remove_cgroup_tree(entry->path());
}

// Sleeps until the wall clock is past a time slurmctld printed
// ("2026-12-02T01:21:36", local time, whole seconds): a slurmd started from
// then on shows a start time of its own. At most 2 s.
void wait_past(const std::string& slurm_time) {
  std::tm fields{};
  if (::strptime(slurm_time.c_str(), "%Y-%m-%dT%H:%M:%S", &fields) == nullptr) return;
  fields.tm_isdst = -1;
  const std::time_t then = std::mktime(&fields);
  const auto give_up = Clock::now() + 2s;
  while (std::time(nullptr) <= then && Clock::now() < give_up) std::this_thread::sleep_for(50ms);
}

// What the constructor needs of this machine; ClusterUnavailable otherwise.
void require_host() {
  if (::geteuid() != 0) throw ClusterUnavailable("a virtual cluster needs root (namespaces, mounts, links)");
  for (const char* program : {"unshare", "nsenter", "ip", "bash", "hostname", "munged", "slurmctld", "slurmd", "sinfo",
                              "scontrol", "squeue", "scancel"}) {
    try {
      program_path(program);
    } catch (const std::runtime_error& missing) {
      throw ClusterUnavailable(missing.what());
    }
  }
  // A throwaway machine of the kinds the cluster makes, with a bridge and a cable.
  const CommandResult probe =
      run_command({program_path("unshare"), "--net", "--uts", "--mount", "--ipc", "--pid", "--fork", "--mount-proc",
                   "--propagation", "private", "--", program_path("bash"), "-c",
                   "ip link add vcprobe0 type bridge && ip link add vcprobe1 type veth peer name vcprobe2"});
  if (probe.exit_status != 0)
    throw ClusterUnavailable("this machine cannot make the namespaces, bridge and veth of a virtual cluster: " +
                             probe.err);
}

}  // namespace

VirtualCluster::VirtualCluster(VirtualClusterOptions options) : options_(std::move(options)) {
  if (options_.nodes < 1 || options_.nodes > 200 || options_.cpus_per_node < 1 || options_.memory_mib_per_node < 1)
    throw std::invalid_argument("a virtual cluster has 1 to 200 nodes, each with a CPU and some memory at least");
  require_host();
  const auto started = Clock::now();
  scratch_ = dir_.path() / "scratch";
  conf_ = dir_.path() / "slurm.conf";
  for (int index = 1; index <= options_.nodes; ++index) {
    Node node;
    node.name = fmt::format("n{}", index);
    node.address = node_address(index);
    nodes_.push_back(std::move(node));
  }
  try {
    write_files();
    // The build (where the programs under test are, and this test), the
    // sources (job scripts), the cluster's folder (configuration, key,
    // logs, spool) and the scratch folder.
    std::vector<fs::path> shared{fs::path(MEMSWEEP_EXECUTABLE).parent_path(), MEMSWEEP_SOURCE_DIR, dir_.path(),
                                 scratch_, fs::read_symlink("/proc/self/exe").parent_path()};
    shared.insert(shared.end(), options_.shared_paths.begin(), options_.shared_paths.end());
    for (const fs::path& path : shared) {
      if (!fs::is_directory(path)) throw std::invalid_argument("a shared path must be a folder: " + path.string());
      shared_.push_back(fs::canonical(path));
    }
    make_cgroups();
    start_head();
    for (Node& node : nodes_) boot(node);
    const auto deadline = Clock::now() + 60s;
    while (!all_nodes_idle()) {
      if (Clock::now() >= deadline)
        throw std::runtime_error("the nodes did not all become idle within 60 s\n" + logs());
      std::this_thread::sleep_for(100ms);
    }
  } catch (...) {
    stop();
    throw;
  }
  bring_up_time_ = Clock::now() - started;
}

VirtualCluster::~VirtualCluster() { stop(); }

void VirtualCluster::write_files() const {
  const fs::path dir = dir_.path();
  for (const char* sub : {"state", "run", "nodes", "commands", "log/head/munged", "log/head/slurmctld", "scratch"})
    fs::create_directories(dir / sub);
  for (const Node& node : nodes_) {
    fs::create_directories(dir / "log" / node.name);
    fs::create_directories(dir / "spool" / node.name);
  }
  // One key for every munged; munged refuses a key others can read.
  {
    std::ifstream random("/dev/urandom", std::ios::binary);
    std::string key(1024, '\0');
    random.read(key.data(), static_cast<std::streamsize>(key.size()));
    std::ofstream(dir / "munge.key", std::ios::binary) << key;
    fs::permissions(dir / "munge.key", fs::perms::owner_read);
  }
  // Each machine's /etc/hosts: its neighbours by name (munged resolves its
  // own; Open MPI and the tests may resolve the others').
  {
    std::ofstream hosts(dir / "hosts");
    hosts << "127.0.0.1 localhost\n::1 localhost\n" << kHeadAddress << " head\n";
    for (const Node& node : nodes_) hosts << node.address << ' ' << node.name << '\n';
  }
  {
    std::ofstream script(dir / "boot.sh");
    script << kBootScript;
  }

  std::ofstream conf(conf_);
  conf << fmt::format(
      "# A virtual cluster of {nodes} nodes on one host (tests/cluster/virtual_cluster.cpp).\n"
      "ClusterName=memsweepvc\n"
      "SlurmctldHost=head({head})\n"
      "SlurmUser=root\n"
      "SlurmdUser=root\n"
      "AuthType=auth/munge\n"
      "CredType=cred/munge\n"
      // Each machine's munged has its socket at the same path in its own
      // /run. cred_expire also holds a requeued job back before it may start
      // again (120 s by default).
      "AuthInfo=socket={socket},cred_expire=10\n"
      "StateSaveLocation={dir}/state\n"
      "SlurmdSpoolDir={dir}/spool/%n\n"
      "SlurmctldPidFile={dir}/run/slurmctld.pid\n"
      "SlurmdPidFile={dir}/run/slurmd-%n.pid\n"
      "SlurmctldLogFile={dir}/log/slurmctld.log\n"
      "SlurmdLogFile={dir}/log/%n/slurmd.log\n"
      "SlurmctldDebug=info\n"
      "SlurmdDebug=info\n"
      // Each node has the CPUs and memory the test gave it, not the host's.
      "SlurmdParameters=config_overrides\n"
      "ProctrackType=proctrack/linuxproc\n"
      "TaskPlugin=task/none\n"
      "SelectType=select/cons_tres\n"
      "SelectTypeParameters=CR_CPU_Memory\n"
      "SchedulerType=sched/backfill\n"
      // A job waiting for nodes (a requeued one) starts within seconds of
      // their coming back, not at the next minute's pass.
      "SchedulerParameters=bf_interval=2,sched_interval=2\n"
      "MpiDefault=none\n"
      "ReturnToService=2\n"
      "MailProg=/bin/true\n"
      // No slurmdbd here: job completions go to a text file that `sacct -c` reads.
      "AccountingStorageType=accounting_storage/none\n"
      "JobCompType=jobcomp/filetxt\n"
      "JobCompLoc={dir}/log/jobcomp.txt\n"
      "JobAcctGatherType=jobacct_gather/linux\n"
      // Finished jobs stay visible to scontrol for the tests' checks.
      "MinJobAge=600\n"
      "InactiveLimit=0\n"
      // Failures within seconds: a node that does not answer for 5 s is
      // down (slurmctld pings every SlurmdTimeout/3), a message or a
      // connection that hangs gives up soon, a cancelled step is killed 2 s
      // after its SIGTERM.
      "SlurmdTimeout=5\n"
      "SlurmctldTimeout=10\n"
      "MessageTimeout=5\n"
      "TCPTimeout=2\n"
      "KillWait=2\n"
      "DefMemPerCPU={mem_per_cpu}\n",
      fmt::arg("nodes", nodes_.size()), fmt::arg("head", kHeadAddress), fmt::arg("socket", kMungeSocket),
      fmt::arg("dir", dir.string()),
      fmt::arg("mem_per_cpu", std::max(1L, options_.memory_mib_per_node / options_.cpus_per_node)));
  for (const Node& node : nodes_)
    conf << fmt::format(
        "NodeName={name} NodeHostname={name} NodeAddr={address} CPUs={cpus} RealMemory={memory} "
        "State=UNKNOWN\n",
        fmt::arg("name", node.name), fmt::arg("address", node.address), fmt::arg("cpus", options_.cpus_per_node),
        fmt::arg("memory", options_.memory_mib_per_node));
  conf << "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
  if (!conf) throw std::runtime_error("cannot write " + conf_.string());
}

void VirtualCluster::note(const std::string& what) { notes_.push_back(what); }

void VirtualCluster::make_cgroups() {
  const std::optional<fs::path> parent = cgroup_parent();
  if (!parent) {
    note("no memory cgroup hierarchy (v1 /sys/fs/cgroup/memory or v2 /sys/fs/cgroup): the nodes run in none");
    return;
  }
  remove_abandoned_groups(*parent);
  // Named after the cluster's folder (memsweep-test-XXXXXX): unique while the cluster lives.
  const std::string id = dir_.path().filename().string().substr(std::string("memsweep-test-").size());
  const fs::path group = *parent / ("memsweep-vcluster-" + id);
  if (::mkdir(group.c_str(), 0755) != 0) {
    note(fmt::format("cannot make the cgroup {}: {}; the nodes run in none", group.string(), std::strerror(errno)));
    return;
  }
  cgroup_ = group;
  const bool v2 = fs::exists(group / "cgroup.controllers");
  // On v2 a group limits memory only if its parents hand the controller on.
  if (v2 && !(write_text(*parent / "cgroup.subtree_control", "+memory") &&
              write_text(group / "cgroup.subtree_control", "+memory")))
    note("cannot enable the memory controller below " + group.string() + ": the nodes' memory is not limited");
  for (Node& node : nodes_) {
    const fs::path own = group / node.name;
    if (::mkdir(own.c_str(), 0755) != 0) {
      note(fmt::format("cannot make the cgroup {}: {}", own.string(), std::strerror(errno)));
      continue;
    }
    node.cgroup = own;
    // A node has the memory it says it has.
    const std::string bytes = std::to_string(options_.memory_mib_per_node * 1024 * 1024);
    if (!write_text(own / (v2 ? "memory.max" : "memory.limit_in_bytes"), bytes))
      note("cannot limit the memory of " + own.string());
  }
}

std::map<std::string, std::string> VirtualCluster::boot_environment(const Node* node) const {
  std::map<std::string, std::string> env = environment();
  env["VC_FOLDER"] = dir_.path().string();
  const std::vector<fs::path>& private_dirs = node ? kNodePrivate : kHeadPrivate;
  env["VC_PRIVATE"] = joined(private_dirs, ' ');
  env["VC_BIND_BACK"] = joined(hidden_shared(shared_, private_dirs), '\n');
  if (node == nullptr) {
    env["VC_ADDRESS"] = kHeadAddress;
    env["VC_READY"] = (dir_.path() / "nodes" / "head.ready").string();
    env["VC_CGROUP"] = "";
    return env;
  }
  env["VC_ADDRESS"] = node->address;
  // A file per boot: the previous boot's must not plug this one in.
  env["VC_CABLE"] = (dir_.path() / "nodes" / fmt::format("{}.cable-{}", node->name, node->boots)).string();
  env["VC_CGROUP"] = node->cgroup.string();
  env["VC_LOG"] = (dir_.path() / "log" / node->name).string();
  env["VC_MUNGED"] = program_path("munged");
  env["VC_SLURMD"] = program_path("slurmd");
  return env;
}

void VirtualCluster::start_head() {
  const fs::path dir = dir_.path();
  // No PID namespace for the head: commands entering it (nsenter without
  // --pid) then exec the program itself, so that a test's signal to the pid
  // it holds reaches the program. SIGKILL if this test process dies first.
  head_ = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{program_path("unshare"), "--net", "--uts", "--mount", "--propagation", "private", "--",
                               program_path("bash"), (dir / "boot.sh").string(), "head", "head"},
      dir / "log" / "head", boot_environment(nullptr), dir, SIGKILL);
  const fs::path ready = dir / "nodes" / "head.ready";
  if (!head_->wait_for([&] { return fs::exists(ready) || !process_alive(head_->pid()); }, 10s) || !fs::exists(ready))
    throw std::runtime_error("the head did not come up within 10 s\n" + logs());

  const std::map<std::string, std::string> env = environment();
  head_munged_ = std::make_unique<BackgroundProcess>(
      on_head({program_path("munged"), "--foreground", "--force", "--key-file=" + (dir / "munge.key").string(),
               "--seed-file=/run/munge/munged.seed", "--log-file=" + (dir / "log/head/munged.log").string()},
              dir),
      dir / "log/head/munged", env, fs::path(), SIGTERM);
  const fs::path socket = fs::path(fmt::format("/proc/{}/root", head_->pid())) / fs::path(kMungeSocket).relative_path();
  if (!head_munged_->wait_for([&] { return fs::exists(socket); }, 10s))
    throw std::runtime_error("munged on the head did not create its socket within 10 s\n" + logs());
  slurmctld_ =
      std::make_unique<BackgroundProcess>(on_head({program_path("slurmctld"), "-D", "-f", conf_.string()}, dir),
                                          dir / "log/head/slurmctld", env, fs::path(), SIGTERM);
}

void VirtualCluster::boot(Node& node) {
  ++node.boots;
  const fs::path dir = dir_.path();
  const fs::path output = dir / "log" / node.name / fmt::format("boot-{}", node.boots);
  fs::create_directories(output);
  // unshare stays outside as the parent of the node's first process, which
  // it SIGKILLs if it dies (and so it does if this test process dies first).
  node.boot = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{program_path("unshare"), "--net", "--uts", "--mount", "--ipc", "--pid", "--fork",
                               "--mount-proc", "--propagation", "private", "--kill-child=SIGKILL", "--",
                               program_path("bash"), (dir / "boot.sh").string(), "node", node.name},
      output, boot_environment(&node), dir, SIGKILL);
  pid_t init = 0;
  if (!node.boot->wait_for([&] { return (init = child_of(node.boot->pid())) != 0; }, 10s))
    throw std::runtime_error(fmt::format("{} did not start within 10 s\n{}", node.name, logs()));
  node.init = init;
  node.pid_namespace = pid_namespace_of(init);
  plug_in(node);
}

void VirtualCluster::plug_in(Node& node) {
  // A fresh name per boot: the last boot's link goes only when the kernel
  // has torn that boot's network namespace down, a moment after its end.
  node.link = fmt::format("v{}b{}", node.name, node.boots);
  const std::string head = std::to_string(head_->pid());
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"link", "add", node.link, "type", "veth", "peer", "name", "eth0", "netns",
                                 std::to_string(node.init)},
        std::vector<std::string>{"link", "set", node.link, "master", "br0", "up"}}) {
    std::vector<std::string> argv{program_path("nsenter"), "-t", head, "--net", "--", program_path("ip")};
    argv.insert(argv.end(), command.begin(), command.end());
    const CommandResult result = run_command(argv);
    if (result.exit_status != 0)
      throw std::runtime_error(
          fmt::format("cannot plug {} in ({}): {}", node.name, fmt::join(command, " "), result.err));
  }
  std::ofstream(dir_.path() / "nodes" / fmt::format("{}.cable-{}", node.name, node.boots)) << node.link << '\n';
}

bool VirtualCluster::all_nodes_idle() const {
  const CommandResult sinfo = run({"sinfo", "--noheader", "--Node", "--format=%N %t"});
  if (sinfo.exit_status != 0) return false;
  std::map<std::string, std::string> states;
  std::istringstream lines(sinfo.out);
  for (std::string name, state; lines >> name >> state;) states[name] = state;
  return std::all_of(nodes_.begin(), nodes_.end(), [&](const Node& node) {
    const auto found = states.find(node.name);
    return found != states.end() && found->second == "idle";
  });
}

std::vector<std::string> VirtualCluster::nodes() const {
  std::vector<std::string> names;
  for (const Node& node : nodes_) names.push_back(node.name);
  return names;
}

std::map<std::string, std::string> VirtualCluster::environment() const {
  return {{"SLURM_CONF", conf_.string()},
          {kMarker, dir_.path().string()},
          // Open MPI's daemons (orted, started with srun) and its ranks talk
          // over the cluster's links, never loopback between machines.
          {"OMPI_MCA_oob_tcp_if_include", kSubnet},
          {"OMPI_MCA_btl_tcp_if_include", kSubnet}};
}

std::map<std::string, std::string> VirtualCluster::environment_with(
    const std::map<std::string, std::string>& extra) const {
  std::map<std::string, std::string> env = environment();
  for (const auto& [name, value] : extra) env[name] = value;
  return env;
}

std::vector<std::string> VirtualCluster::on_head(const std::vector<std::string>& argv,
                                                 const fs::path& working_dir) const {
  if (argv.empty()) throw std::invalid_argument("no program to run");
  const fs::path where = working_dir.empty() ? fs::current_path() : working_dir;
  std::vector<std::string> full{
      program_path("nsenter"),    "-t", std::to_string(head_->pid()), "--net", "--mount", "--uts",
      "--wdns=" + where.string(), "--"};
  full.push_back(argv.front().find('/') == std::string::npos ? program_path(argv.front()) : argv.front());
  full.insert(full.end(), argv.begin() + 1, argv.end());
  return full;
}

CommandResult VirtualCluster::run(const std::vector<std::string>& argv, const fs::path& working_dir,
                                  const std::map<std::string, std::string>& extra_environment) const {
  if (!head_ || !process_alive(head_->pid())) throw std::runtime_error("the virtual cluster's head is not running");
  return run_command(on_head(argv, working_dir), "", environment_with(extra_environment), SIGKILL);
}

CommandResult VirtualCluster::run_on(const std::string& name, const std::vector<std::string>& argv,
                                     const fs::path& working_dir,
                                     const std::map<std::string, std::string>& extra_environment) const {
  const Node& node = node_named(name);
  if (node.init == 0) throw std::runtime_error(name + " is down (killed): restart() it first");
  if (argv.empty()) throw std::invalid_argument("no program to run");
  const fs::path where = working_dir.empty() ? fs::current_path() : working_dir;
  std::vector<std::string> full;
  // Into the node's cgroup first, as everything on the node.
  if (!node.cgroup.empty())
    full = {"/bin/sh", "-c", "echo $$ > \"$0\" 2>/dev/null; exec \"$@\"", (node.cgroup / "cgroup.procs").string()};
  for (const std::string& arg :
       {program_path("nsenter"), std::string("-t"), std::to_string(node.init), std::string("--mount"),
        std::string("--uts"), std::string("--ipc"), std::string("--net"), std::string("--pid"),
        "--wdns=" + where.string(), std::string("--")})
    full.push_back(arg);
  full.push_back(argv.front().find('/') == std::string::npos ? program_path(argv.front()) : argv.front());
  full.insert(full.end(), argv.begin() + 1, argv.end());
  return run_command(full, "", environment_with(extra_environment), SIGKILL);
}

std::unique_ptr<BackgroundProcess> VirtualCluster::start_on_head(
    const std::vector<std::string>& argv, const fs::path& working_dir,
    const std::map<std::string, std::string>& extra_environment) const {
  if (!head_ || !process_alive(head_->pid())) throw std::runtime_error("the virtual cluster's head is not running");
  const fs::path output = dir_.path() / "commands" / std::to_string(++commands_started_);
  fs::create_directories(output);
  // SIGTERM if this test process dies first, as for the daemons.
  return std::make_unique<BackgroundProcess>(on_head(argv, working_dir), output, environment_with(extra_environment),
                                             fs::path(), SIGTERM);
}

VirtualCluster::Node& VirtualCluster::node_named(const std::string& name) {
  return const_cast<Node&>(std::as_const(*this).node_named(name));
}

const VirtualCluster::Node& VirtualCluster::node_named(const std::string& name) const {
  for (const Node& node : nodes_)
    if (node.name == name) return node;
  throw std::invalid_argument("the virtual cluster has no node " + name);
}

void VirtualCluster::end_node(Node& node) {
  // SIGKILL of a PID namespace's first process ends every process in it at
  // once; unshare, its parent, ends with it. A boot that failed before its
  // first process was found: unshare's SIGKILL takes that process along.
  if (node.init != 0) {
    ::kill(node.init, SIGKILL);
  } else if (node.boot) {
    node.boot->signal(SIGKILL);
  }
  if (node.boot && !node.boot->wait_until_ended(10s))
    note(fmt::format("unshare of {} did not end within 10 s of its node's SIGKILL", node.name));
  node.boot.reset();
  const auto deadline = Clock::now() + 10s;
  while (!processes_on(node.name).empty() && Clock::now() < deadline) std::this_thread::sleep_for(20ms);
  if (!processes_on(node.name).empty()) note(fmt::format("processes of {} outlived its SIGKILL by 10 s", node.name));
  node.init = 0;
  // Its number may name another namespace once this one is gone.
  node.pid_namespace.clear();
}

void VirtualCluster::kill(const std::string& name) { end_node(node_named(name)); }

void VirtualCluster::signal_node(const std::string& name, int signal) const {
  // Again until every process is in the state asked for: one may have
  // started another between the look at /proc and the signal.
  const bool stopping = signal == SIGSTOP;
  for (int round = 0; round < 50; ++round) {
    bool settled = true;
    for (const pid_t pid : processes_on(name)) {
      const char state = process_state(pid);
      if (state == '\0' || state == 'Z' || (state == 'T') == stopping) continue;
      settled = false;
      ::kill(pid, signal);
    }
    if (settled) return;
    std::this_thread::sleep_for(20ms);
  }
  throw std::runtime_error(
      fmt::format("the processes of {} did not all {} within 1 s", name, stopping ? "stop" : "continue"));
}

void VirtualCluster::freeze(const std::string& name) { signal_node(name, SIGSTOP); }
void VirtualCluster::thaw(const std::string& name) { signal_node(name, SIGCONT); }

void VirtualCluster::set_link(const Node& node, const std::string& state) const {
  if (node.init == 0) return;  // a killed node's link went with it
  const CommandResult result = run_command({program_path("nsenter"), "-t", std::to_string(head_->pid()), "--net", "--",
                                            program_path("ip"), "link", "set", node.link, state});
  if (result.exit_status != 0)
    throw std::runtime_error(fmt::format("cannot set the link of {} {}: {}", node.name, state, result.err));
}

void VirtualCluster::cut(const std::string& name) { set_link(node_named(name), "down"); }
void VirtualCluster::restore(const std::string& name) { set_link(node_named(name), "up"); }

std::string VirtualCluster::slurmd_start_time(const std::string& name) const {
  const CommandResult show = run({"scontrol", "--oneliner", "show", "node", name});
  if (show.exit_status != 0) return "";
  const auto fields = scontrol_fields(show.out);
  const auto found = fields.find("SlurmdStartTime");
  return found == fields.end() ? "" : found->second;
}

void VirtualCluster::wait_until_registered(const Node& node, const std::string& slurmd_started_before) const {
  // Registered: slurmctld has the new slurmd's start time (where it shows
  // one), and the node answers (no `*`) and is back in service.
  const auto registered = [&] {
    const std::string state = node_state(node.name);
    return (slurmd_started_before.empty() || slurmd_start_time(node.name) != slurmd_started_before) && !state.empty() &&
           state.back() != '*' && !state.starts_with("down") && !state.starts_with("unk");
  };
  const auto deadline = Clock::now() + 60s;
  while (!registered()) {
    if (Clock::now() >= deadline)
      throw std::runtime_error(fmt::format("{} did not register within 60 s of its boot (state {})\n{}", node.name,
                                           node_state(node.name), logs()));
    std::this_thread::sleep_for(100ms);
  }
}

void VirtualCluster::restart(const std::string& name) {
  Node& node = node_named(name);
  const std::string started_before = slurmd_start_time(name);
  end_node(node);
  const auto started = Clock::now();
  wait_past(started_before);
  boot(node);
  wait_until_registered(node, started_before);
  last_restart_time_ = Clock::now() - started;
}

std::string VirtualCluster::node_state(const std::string& name) const {
  const CommandResult sinfo = run({"sinfo", "--noheader", "--nodes=" + name, "--format=%t"});
  return sinfo.exit_status == 0 ? trimmed(sinfo.out) : "";
}

bool VirtualCluster::wait_for_node(const std::string& name, const std::function<bool(const std::string&)>& state_ok,
                                   std::chrono::seconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (state_ok(node_state(name))) return true;
    std::this_thread::sleep_for(250ms);
  }
  return state_ok(node_state(name));
}

std::vector<pid_t> VirtualCluster::processes_on(const std::string& name) const {
  const Node& node = node_named(name);
  std::vector<pid_t> found;
  if (node.pid_namespace.empty()) return found;
  for (const pid_t pid : all_pids())
    if (pid_namespace_of(pid) == node.pid_namespace) found.push_back(pid);
  return found;
}

std::string VirtualCluster::node_of(pid_t pid) const {
  const std::string name_space = pid_namespace_of(pid);
  for (const Node& node : nodes_)
    if (!node.pid_namespace.empty() && node.pid_namespace == name_space) return node.name;
  return "";
}

fs::path VirtualCluster::node_root(const std::string& name) const {
  const Node& node = node_named(name);
  return node.init == 0 ? fs::path() : fs::path(fmt::format("/proc/{}/root", node.init));
}

fs::path VirtualCluster::node_cgroup(const std::string& name) const { return node_named(name).cgroup; }

std::vector<std::map<std::string, std::string>> VirtualCluster::jobs(const std::string& id) const {
  return scontrol_jobs([this](const std::vector<std::string>& argv) { return run(argv); }, id);
}

std::map<std::string, std::string> VirtualCluster::job(const std::string& id) const {
  const auto found = jobs(id);
  return found.empty() ? std::map<std::string, std::string>{} : found.front();
}

bool VirtualCluster::wait_for_jobs(const std::string& id, std::chrono::seconds timeout) const {
  return wait_until_jobs_end([this](const std::vector<std::string>& argv) { return run(argv); }, id, timeout);
}

std::string VirtualCluster::logs() const {
  const fs::path log = dir_.path() / "log";
  std::string text;
  const auto add = [&](const fs::path& file, std::size_t lines) {
    if (fs::exists(file)) text += fmt::format("--- {} (last lines)\n{}", file.string(), last_lines(slurp(file), lines));
  };
  add(log / "slurmctld.log", 20);
  add(log / "head/munged.log", 5);
  add(log / "head/background.err", 5);
  add(log / "head/munged/background.err", 5);
  add(log / "head/slurmctld/background.err", 5);
  for (const Node& node : nodes_) {
    add(log / node.name / "slurmd.log", 10);
    add(log / node.name / "munged.log", 5);
    add(log / node.name / fmt::format("boot-{}", node.boots) / "background.err", 10);
  }
  for (const std::string& what : notes_) text += "--- note: " + what + "\n";
  return text;
}

void VirtualCluster::remove_cgroups() {
  if (cgroup_.empty()) return;
  // A group can go only once its last process has left it, which the
  // kernel finishes a moment after that process's end.
  const auto deadline = Clock::now() + 10s;
  while (fs::exists(cgroup_) && Clock::now() < deadline) {
    remove_cgroup_tree(cgroup_);
    if (fs::exists(cgroup_)) std::this_thread::sleep_for(50ms);
  }
  if (fs::exists(cgroup_)) note("cannot remove the cgroup " + cgroup_.string());
}

void VirtualCluster::stop() {
  if (stopped_) return;
  stopped_ = true;
  // Jobs first, while slurmctld still runs, so that Slurm ends them itself
  // (salloc and srun on the head return); a frozen node could not.
  for (const Node& node : nodes_)
    if (node.init != 0) {
      for (const pid_t pid : processes_on(node.name)) ::kill(pid, SIGCONT);
    }
  if (slurmctld_ && process_alive(slurmctld_->pid()) && head_ && process_alive(head_->pid())) {
    run({"scancel", "--user=" + std::to_string(::getuid())});
    // Until every job is completing (CG): a job's step on a cut or killed
    // node completes only once slurmctld gives the node up, and the nodes'
    // end below ends every step anyway.
    const auto deadline = Clock::now() + 10s;
    while (Clock::now() < deadline) {
      const CommandResult queue = run({"squeue", "--noheader", "--format=%t"});
      const std::vector<std::string> states = [&] {
        std::vector<std::string> words;
        std::istringstream in(queue.out);
        for (std::string word; in >> word;) words.push_back(word);
        return words;
      }();
      if (queue.exit_status != 0 ||
          std::all_of(states.begin(), states.end(), [](const std::string& state) { return state == "CG"; }))
        break;
      std::this_thread::sleep_for(250ms);
    }
  }
  for (Node& node : nodes_) end_node(node);
  for (std::unique_ptr<BackgroundProcess>* daemon : {&slurmctld_, &head_munged_}) {
    if (!*daemon) continue;
    (*daemon)->signal(SIGTERM);
    // A daemon that does not end on SIGTERM within 10 s is killed.
    (*daemon)->wait_until_ended(10s);
    daemon->reset();  // SIGKILL if it still runs, and reaps it
  }
  // Whatever the jobs and commands left on the head (salloc, srun, mpirun,
  // nsenter): only processes carrying this cluster's marker.
  for (int round = 0; round < 5; ++round) {
    std::vector<pid_t> left = processes_with_environment(kMarker, dir_.path().string());
    std::erase(left, ::getpid());
    if (head_) std::erase(left, head_->pid());
    if (left.empty()) break;
    for (const pid_t pid : left) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(100ms);
  }
  // Last, the head: its namespaces, bridge and links go with its holder.
  head_.reset();
  remove_cgroups();
}

}  // namespace memsweep::testing
