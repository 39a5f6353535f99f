// The virtual cluster itself (VirtualCluster): that its nodes are machines
// of their own on a network with no way out, that Slurm and Open MPI span
// them, that each failure a test can cause is the failure it says, and that
// stop() leaves nothing behind but what it did not make.

#include "cluster/virtual_cluster.hpp"
#include "slurm/slurm_cluster.hpp"
#include "support/background_process.hpp"
#include "support/file_text.hpp"
#include "support/skip_or_fail.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace memsweep::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;

constexpr const char* kMarker = "MEMSWEEP_TEST_VIRTUAL_CLUSTER";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

std::vector<std::string> sorted(std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  return values;
}

// The state letter of /proc/PID/stat (R, S, T, Z, ...); 0 when it is gone.
char process_state(pid_t pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() ? stat[close + 2] : '\0';
}

// A zombie has ended: only its parent has not collected it yet.
bool process_running(pid_t pid) {
  const char state = process_state(pid);
  return state != '\0' && state != 'Z';
}

std::string namespace_link(pid_t pid, const char* kind) {
  std::error_code error;
  return fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/" + kind, error).string();
}

// Host pids whose namespace of `kind` is `link`.
std::vector<pid_t> processes_in_namespace(const char* kind, const std::string& link) {
  std::vector<pid_t> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    if (namespace_link(pid, kind) == link) found.push_back(pid);
  }
  return found;
}

// An IPv4 address of this host outside loopback, or "" when it has none.
std::string host_address() {
  ifaddrs* addresses = nullptr;
  if (::getifaddrs(&addresses) != 0) return "";
  std::string found;
  for (const ifaddrs* entry = addresses; entry != nullptr && found.empty(); entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* address = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
    ::inet_ntop(AF_INET, &address->sin_addr, text, sizeof text);
    if (!std::string(text).starts_with("127.")) found = text;
  }
  ::freeifaddrs(addresses);
  return found;
}

// A TCP connection attempt from bash (no nc on a minimal machine), given up
// after 3 s: a link that is down drops the packets rather than refusing them.
std::vector<std::string> connect_to(const std::string& address, int port) {
  return {"timeout", "3", "bash", "-c", "exec 3<>/dev/tcp/" + address + "/" + std::to_string(port)};
}

// Every rank's host and a sum over all ranks: the ranks talked to each other.
constexpr const char* kMpiProgram = R"(#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char host[64] = {0};
  gethostname(host, sizeof host - 1);
  static char hosts[64][64];
  if (size <= 64) MPI_Gather(host, 64, MPI_CHAR, hosts, 64, MPI_CHAR, 0, MPI_COMM_WORLD);
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int i = 0; i < size && i < 64; ++i) printf("rank %d on %s\n", i, hosts[i]);
    printf("sum %d\n", sum);
  }
  MPI_Finalize();
  return 0;
}
)";

class VirtualClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    VirtualClusterOptions options;
    options.shared_paths.push_back(shared_.path());
    try {
      cluster_ = std::make_unique<VirtualCluster>(options);
    } catch (const ClusterUnavailable& unavailable) {
      MEMSWEEP_SKIP_OR_FAIL_IN_CI(std::string("no virtual cluster on this machine: ") + unavailable.what());
    }
    std::cout << "bring-up: " << cluster_->bring_up_time().count() << " s" << std::endl;
  }
  void TearDown() override {
    if (!cluster_) return;
    if (HasFailure()) std::cerr << cluster_->logs();
    cluster_->stop();
  }

  // Waits for the node's state to satisfy `ok`; the seconds it took, or
  // fails the test.
  double seconds_until(const std::string& node, const std::function<bool(const std::string&)>& ok,
                       const std::string& what) {
    const auto start = Clock::now();
    EXPECT_TRUE(cluster_->wait_for_node(node, ok, 60s))
        << node << " is " << cluster_->node_state(node) << ", not " << what << ", after 60 s";
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  // A folder of the test's own under /tmp, shared by the options: every
  // node sees it in spite of its private /tmp.
  TempDir shared_;
  std::unique_ptr<VirtualCluster> cluster_;
};

bool down(const std::string& state) { return state.starts_with("down"); }
bool not_responding(const std::string& state) { return !state.empty() && state.back() == '*'; }
bool idle(const std::string& state) { return state == "idle"; }

TEST_F(VirtualClusterTest, NodesAreMachinesOfTheirOwnOnANetworkWithNoWayOut) {
  const VirtualCluster& cluster = *cluster_;
  EXPECT_EQ(cluster.nodes(), (std::vector<std::string>{"n1", "n2", "n3"}));
  // One task per node, each on the host it names.
  const CommandResult srun = cluster.run({"srun", "-N3", "hostname"});
  ASSERT_EQ(srun.exit_status, 0) << srun.err;
  EXPECT_EQ(sorted(lines_of(srun.out)), (std::vector<std::string>{"n1", "n2", "n3"}));
  // Idle again once the job's step is cleaned up (sinfo shows `comp` for
  // the moment in between), with the CPUs and memory the options gave, not
  // the host's.
  for (const std::string& node : cluster.nodes()) seconds_until(node, idle, "idle");
  const CommandResult sinfo = cluster.run({"sinfo", "--noheader", "--Node", "--format=%N %c %m"});
  ASSERT_EQ(sinfo.exit_status, 0) << sinfo.err;
  EXPECT_EQ(lines_of(sinfo.out), (std::vector<std::string>{"n1 2 3072", "n2 2 3072", "n3 2 3072"}));

  // Each node's /dev/shm and /tmp are its own, the shared folders everyone's.
  const std::string probe = "memsweep-vcluster-probe";
  const CommandResult wrote = cluster.run_on("n1", {"sh", "-c",
                                                    "hostname > /dev/shm/" + probe + " && hostname > /tmp/" + probe +
                                                        " && hostname > " + (cluster.scratch() / probe).string()});
  ASSERT_EQ(wrote.exit_status, 0) << wrote.err;
  EXPECT_EQ(slurp(cluster.node_root("n1") / "dev/shm" / probe), "n1\n");
  EXPECT_EQ(slurp(cluster.node_root("n1") / "tmp" / probe), "n1\n");
  EXPECT_FALSE(fs::exists(cluster.node_root("n2") / "dev/shm" / probe));
  EXPECT_FALSE(fs::exists(cluster.node_root("n2") / "tmp" / probe));
  EXPECT_FALSE(fs::exists(fs::path("/dev/shm") / probe));
  EXPECT_FALSE(fs::exists(fs::path("/tmp") / probe));
  EXPECT_NE(cluster.run_on("n2", {"cat", "/dev/shm/" + probe}).exit_status, 0);
  const CommandResult shared = cluster.run_on("n2", {"cat", (cluster.scratch() / probe).string()});
  EXPECT_EQ(shared.out, "n1\n") << shared.err;
  EXPECT_EQ(cluster.run({"cat", (cluster.scratch() / probe).string()}).out, "n1\n");
  shared_.write(probe, "host\n");
  EXPECT_EQ(cluster.run_on("n3", {"cat", (shared_.path() / probe).string()}).out, "host\n");

  // The subnet and nothing else: no default route on any machine.
  for (const std::string& node : cluster.nodes()) {
    const CommandResult routes = cluster.run_on(node, {"ip", "route"});
    ASSERT_EQ(routes.exit_status, 0) << routes.err;
    EXPECT_THAT(routes.out, HasSubstr("10.213.0.0/24")) << node;
    EXPECT_THAT(routes.out, Not(HasSubstr("default"))) << node;
  }
  const CommandResult head_routes = cluster.run({"ip", "route"});
  EXPECT_THAT(head_routes.out, HasSubstr("10.213.0.0/24"));
  EXPECT_THAT(head_routes.out, Not(HasSubstr("default")));
  // The head's slurmctld and another node's slurmd answer; the world and
  // the host do not even have a route.
  EXPECT_EQ(cluster.run_on("n1", connect_to("10.213.0.1", 6817)).exit_status, 0);
  EXPECT_EQ(cluster.run_on("n1", connect_to("10.213.0.12", 6818)).exit_status, 0);
  std::vector<std::string> outside{"8.8.8.8"};
  if (const std::string host = host_address(); !host.empty()) outside.push_back(host);
  for (const std::string& address : outside) {
    const CommandResult from_node = cluster.run_on("n1", connect_to(address, 53));
    EXPECT_NE(from_node.exit_status, 0) << address;
    EXPECT_THAT(from_node.err, HasSubstr("Network is unreachable")) << address;
    const CommandResult from_head = cluster.run(connect_to(address, 53));
    EXPECT_NE(from_head.exit_status, 0) << address;
    EXPECT_THAT(from_head.err, HasSubstr("Network is unreachable")) << address;
  }

  // Every process of a node is in the node's cgroup.
  for (const std::string& node : cluster.nodes()) {
    const fs::path cgroup = cluster.node_cgroup(node);
    if (cgroup.empty()) {
      announce_skip("no cgroup for " + node + " on this machine:\n" + cluster.logs());
      continue;
    }
    std::set<std::string> members;
    for (const std::string& line : lines_of(slurp(cgroup / "cgroup.procs"))) members.insert(line);
    const std::vector<pid_t> processes = cluster.processes_on(node);
    EXPECT_GE(processes.size(), 3u) << node;  // its init, munged, slurmd
    for (const pid_t pid : processes) {
      if (!process_running(pid)) continue;  // ended since
      EXPECT_EQ(members.count(std::to_string(pid)), 1u) << node << " pid " << pid;
    }
  }
}

TEST_F(VirtualClusterTest, MpirunInAnAllocationRunsRanksOnEveryNodeThatTalkOverTheLinks) {
  std::string mpicc;
  try {
    mpicc = program_path("mpicc");
  } catch (const std::runtime_error& missing) {
    MEMSWEEP_SKIP_OR_FAIL_IN_CI(std::string("no mpicc for the test's MPI program: ") + missing.what());
  }
  const fs::path source = cluster_->scratch() / "ranks.c";
  const fs::path program = cluster_->scratch() / "ranks";
  std::ofstream(source) << kMpiProgram;
  const CommandResult compiled = run_command({mpicc, "-o", program.string(), source.string()});
  ASSERT_EQ(compiled.exit_status, 0) << compiled.err;

  // Four tasks on three nodes of two CPUs: two on one, one on each other.
  const CommandResult hostnames = cluster_->run(
      {"timeout", "120", "salloc", "-N3", "-n4", "mpirun", "--allow-run-as-root", "hostname"}, cluster_->scratch());
  ASSERT_EQ(hostnames.exit_status, 0) << hostnames.out << hostnames.err;
  const std::vector<std::string> hosts = lines_of(hostnames.out);
  EXPECT_EQ(hosts.size(), 4u) << hostnames.out;
  EXPECT_EQ(std::set<std::string>(hosts.begin(), hosts.end()), (std::set<std::string>{"n1", "n2", "n3"}));

  const CommandResult ranks =
      cluster_->run({"timeout", "120", "salloc", "-N3", "-n4", "mpirun", "--allow-run-as-root", program.string()},
                    cluster_->scratch());
  ASSERT_EQ(ranks.exit_status, 0) << ranks.out << ranks.err;
  std::set<std::string> rank_hosts;
  int ranks_seen = 0;
  for (const std::string& line : lines_of(ranks.out)) {
    char host[64] = {};
    int rank = -1;
    if (std::sscanf(line.c_str(), "rank %d on %63s", &rank, host) == 2) {
      ++ranks_seen;
      rank_hosts.insert(host);
    }
  }
  EXPECT_EQ(ranks_seen, 4) << ranks.out;
  EXPECT_EQ(rank_hosts, (std::set<std::string>{"n1", "n2", "n3"})) << ranks.out;
  EXPECT_THAT(ranks.out, HasSubstr("sum 6")) << ranks.out;
}

TEST_F(VirtualClusterTest, AKilledNodeLosesEverythingGoesDownAndRestartsFresh) {
  VirtualCluster& cluster = *cluster_;
  const std::string probe = "memsweep-vcluster-probe";
  ASSERT_EQ(cluster.run_on("n2", {"sh", "-c", "echo before > /dev/shm/" + probe}).exit_status, 0);
  const std::vector<pid_t> before = cluster.processes_on("n2");
  ASSERT_GE(before.size(), 3u);

  cluster.kill("n2");
  for (const pid_t pid : before) EXPECT_FALSE(process_running(pid)) << "pid " << pid << " of n2 survived";
  EXPECT_TRUE(cluster.processes_on("n2").empty());
  EXPECT_TRUE(cluster.node_root("n2").empty());
  // Slurm finds out by itself, as from a real node's power loss.
  const double detected = seconds_until("n2", down, "down");
  std::cout << "a killed node is down after " << detected << " s" << std::endl;
  EXPECT_EQ(cluster.node_state("n1"), "idle");
  EXPECT_EQ(cluster.node_state("n3"), "idle");

  cluster.restart("n2");
  std::cout << "restart: " << cluster.last_restart_time().count() << " s" << std::endl;
  EXPECT_EQ(cluster.node_state("n2"), "idle");
  EXPECT_FALSE(fs::exists(cluster.node_root("n2") / "dev/shm" / probe)) << "n2's /dev/shm outlived its power loss";
  const CommandResult srun = cluster.run({"srun", "-N3", "hostname"});
  ASSERT_EQ(srun.exit_status, 0) << srun.err;
  EXPECT_EQ(sorted(lines_of(srun.out)), (std::vector<std::string>{"n1", "n2", "n3"}));

  // At once again, while it runs (restart() kills it first), within the
  // second its slurmd started in.
  const std::vector<pid_t> second_boot = cluster.processes_on("n2");
  cluster.restart("n2");
  EXPECT_EQ(cluster.node_state("n2"), "idle");
  for (const pid_t pid : second_boot) EXPECT_FALSE(process_running(pid)) << "pid " << pid << " of n2 survived";
}

TEST_F(VirtualClusterTest, ACutNodeRunsOnUnheardAndAnswersAgainOnceRestored) {
  VirtualCluster& cluster = *cluster_;
  const std::vector<pid_t> before = cluster.processes_on("n3");
  ASSERT_GE(before.size(), 3u);

  cluster.cut("n3");
  // The head is out of reach (no answer, not even a refusal).
  EXPECT_NE(cluster.run_on("n3", connect_to("10.213.0.1", 6817)).exit_status, 0);
  const double detected = seconds_until("n3", not_responding, "not responding");
  std::cout << "a cut node is not responding after " << detected << " s (" << cluster.node_state("n3") << ")"
            << std::endl;
  for (const pid_t pid : before) EXPECT_TRUE(process_running(pid)) << "pid " << pid << " of n3 ended";

  cluster.restore("n3");
  const double back = seconds_until("n3", idle, "idle");
  std::cout << "a restored node is idle again after " << back << " s" << std::endl;
  EXPECT_EQ(cluster.run_on("n3", connect_to("10.213.0.1", 6817)).exit_status, 0);
}

TEST_F(VirtualClusterTest, AFrozenNodeStopsEveryProcessAndAThawedOneRunsOn) {
  VirtualCluster& cluster = *cluster_;
  const std::vector<pid_t> before = cluster.processes_on("n1");
  ASSERT_GE(before.size(), 3u);

  cluster.freeze("n1");
  for (const pid_t pid : cluster.processes_on("n1")) EXPECT_EQ(process_state(pid), 'T') << "pid " << pid;
  cluster.thaw("n1");
  for (const pid_t pid : cluster.processes_on("n1")) {
    const char state = process_state(pid);
    EXPECT_TRUE(state == 'S' || state == 'R' || state == 'D') << "pid " << pid << " is " << state;
  }
  const CommandResult srun = cluster.run({"srun", "-w", "n1", "hostname"});
  EXPECT_EQ(srun.out, "n1\n") << srun.err;
}

// The host's network links by name.
std::set<std::string> host_links() {
  std::set<std::string> names;
  for (const std::string& line : lines_of(run_command({program_path("ip"), "-o", "link"}).out)) {
    std::istringstream words(line);
    std::string index, name;
    words >> index >> name;
    names.insert(name);
  }
  return names;
}

TEST(VirtualClusterStop, EndsEverythingItMadeWhateverTheTestDidAndNothingElse) {
  const std::set<std::string> links_before = host_links();
  const TempDir outside;
  // A process the cluster did not start, running the same program as a job:
  // it must survive stop().
  BackgroundProcess bystander({"/bin/sleep", "300"}, outside.path());
  std::unique_ptr<VirtualCluster> cluster;
  try {
    cluster = std::make_unique<VirtualCluster>();
  } catch (const ClusterUnavailable& unavailable) {
    MEMSWEEP_SKIP_OR_FAIL_IN_CI(std::string("no virtual cluster on this machine: ") + unavailable.what());
  }
  // What a cluster whose test process was killed outright left (a SIGKILL
  // skips stop()): the next cluster removes it.
  const fs::path abandoned = cluster->node_cgroup("n1").parent_path().parent_path() / "memsweep-vcluster-abandoned";
  if (!cluster->node_cgroup("n1").empty()) {
    ASSERT_TRUE(fs::create_directories(abandoned / "n1")) << abandoned;
    VirtualCluster next;
    EXPECT_FALSE(fs::exists(abandoned)) << "an abandoned cluster's cgroup was left";
  }
  const std::string marker = cluster->environment().at(kMarker);
  // A job on every node, an allocation's command held on the head.
  const CommandResult submitted =
      cluster->run({"sbatch", "--parsable", "-N3", "--wrap=srun sleep 300"}, cluster->scratch());
  ASSERT_EQ(submitted.exit_status, 0) << submitted.err;
  const std::unique_ptr<BackgroundProcess> held =
      cluster->start_on_head({"salloc", "-N1", "-n1", "--mem=64", "sleep", "300"}, cluster->scratch());
  const auto sleeping_on = [&](const std::string& node) {
    for (const pid_t pid : cluster->processes_on(node))
      if (slurp("/proc/" + std::to_string(pid) + "/comm") == "sleep\n" &&
          slurp("/proc/" + std::to_string(parent_of(pid)) + "/comm") == "slurmstepd\n")
        return true;
    return false;
  };
  ASSERT_TRUE(bystander.wait_for([&] { return sleeping_on("n1") && sleeping_on("n2") && sleeping_on("n3"); }, 60s))
      << cluster->logs();

  std::vector<std::string> pid_namespaces;
  for (const std::string& node : cluster->nodes())
    pid_namespaces.push_back(namespace_link(cluster->processes_on(node).front(), "pid"));
  const std::vector<pid_t> started = processes_with_environment(kMarker, marker);
  ASSERT_GE(started.size(), 12u);
  std::string head_network;
  for (const pid_t pid : started)
    if (slurp("/proc/" + std::to_string(pid) + "/comm") == "slurmctld\n") head_network = namespace_link(pid, "net");
  ASSERT_FALSE(head_network.empty());
  const fs::path cgroup = cluster->node_cgroup("n1").parent_path();
  // Whatever the test did to the nodes.
  cluster->freeze("n1");
  cluster->cut("n2");
  cluster->kill("n3");

  cluster->stop();

  for (const pid_t pid : started) EXPECT_FALSE(process_running(pid)) << "process " << pid << " survived stop()";
  EXPECT_TRUE(processes_with_environment(kMarker, marker).empty());
  for (const std::string& link : pid_namespaces) EXPECT_TRUE(processes_in_namespace("pid", link).empty()) << link;
  // No process holds the head's network namespace: it is gone, with its
  // bridge and the nodes' links; the host never had them.
  EXPECT_TRUE(processes_in_namespace("net", head_network).empty());
  EXPECT_EQ(host_links(), links_before);
  EXPECT_THAT(slurp("/proc/self/mountinfo"), Not(HasSubstr("vcluster")));
  EXPECT_THAT(slurp("/proc/self/mountinfo"), Not(HasSubstr(cluster->folder().string())));
  if (!cgroup.empty()) {
    EXPECT_FALSE(fs::exists(cgroup)) << cgroup;
  }
  EXPECT_TRUE(process_running(bystander.pid())) << "stop() ended a process it did not start";
  cluster->stop();  // again: nothing left to do
  EXPECT_TRUE(process_running(bystander.pid()));
}

}  // namespace
}  // namespace memsweep::testing
