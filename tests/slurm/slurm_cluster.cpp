#include "slurm/slurm_cluster.hpp"
#include "support/file_text.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace memsweep::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Every process this cluster starts, and every job it runs, carries this
// variable (= the cluster's folder), so that stop() can find them all and
// nothing else.
constexpr const char* kMarker = "MEMSWEEP_TEST_SLURM_CLUSTER";

std::string last_lines(const std::string& text, std::size_t count) {
  std::size_t start = text.size();
  for (std::size_t seen = 0; start > 0 && seen <= count; --start)
    if (text[start - 1] == '\n') ++seen;
  return text.substr(start);
}

// A TCP port on loopback that nothing listens on now (the kernel's choice).
int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free port on loopback");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

// MemTotal in MiB: slurmd drains a node configured with more than it has.
long memory_mib() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  long kib = 0;
  while (meminfo >> key >> kib)
    if (key == "MemTotal:") return kib / 1024;
  throw std::runtime_error("no MemTotal in /proc/meminfo");
}

bool process_alive(pid_t pid) { return ::kill(pid, 0) == 0; }

}  // namespace

std::map<std::string, std::string> scontrol_fields(const std::string& line) {
  std::map<std::string, std::string> fields;
  std::istringstream words(line);
  for (std::string word; words >> word;) {
    const std::size_t equals = word.find('=');
    if (equals != std::string::npos) fields[word.substr(0, equals)] = word.substr(equals + 1);
  }
  return fields;
}

std::string program_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream folders(path ? path : "/usr/bin:/bin");
  for (std::string folder; std::getline(folders, folder, ':');) {
    const fs::path candidate = fs::path(folder) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  for (const char* folder : {"/usr/sbin", "/sbin"}) {
    const fs::path candidate = fs::path(folder) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  throw std::runtime_error(name + " not found on PATH (Debian packages slurm-wlm and munge: ci/install-deps.sh)");
}

bool job_state_final(const std::string& state) {
  static const std::set<std::string> final_states{"COMPLETED", "FAILED",   "CANCELLED", "TIMEOUT",      "NODE_FAIL",
                                                  "BOOT_FAIL", "DEADLINE", "PREEMPTED", "OUT_OF_MEMORY"};
  return final_states.count(state) != 0;
}

SlurmCluster::SlurmCluster() {
  cpus_ = std::max(1, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)));
  try {
    write_configuration();
    start_daemons();
  } catch (...) {
    stop();
    throw;
  }
}

SlurmCluster::~SlurmCluster() { stop(); }

void SlurmCluster::write_configuration() {
  const fs::path dir = dir_.path();
  for (const char* sub : {"munge", "state", "spool", "log"}) fs::create_directories(dir / sub);
  // munged refuses a key others can read, and needs its socket's folder searchable.
  fs::permissions(dir / "munge", fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  {
    std::ifstream random("/dev/urandom", std::ios::binary);
    std::string key(1024, '\0');
    random.read(key.data(), static_cast<std::streamsize>(key.size()));
    std::ofstream(dir / "munge" / "munge.key", std::ios::binary) << key;
    fs::permissions(dir / "munge" / "munge.key", fs::perms::owner_read);
  }

  conf_ = dir / "slurm.conf";
  std::ofstream conf(conf_);
  conf << fmt::format(
      "# A one-host cluster on loopback for memsweep's job-script tests.\n"
      "ClusterName=memsweeptest\n"
      "SlurmctldHost=localhost(127.0.0.1)\n"
      "SlurmctldPort={ctld_port}\n"
      "SlurmdPort={slurmd_port}\n"
      "SlurmUser=root\n"
      "SlurmdUser=root\n"
      "AuthType=auth/munge\n"
      "CredType=cred/munge\n"
      // cred_expire also holds a requeued job back before it may start again
      // (120 s by default); 10 s keeps the requeue test within minutes.
      "AuthInfo=socket={dir}/munge/munge.socket,cred_expire=10\n"
      "StateSaveLocation={dir}/state\n"
      "SlurmdSpoolDir={dir}/spool\n"
      "SlurmctldPidFile={dir}/slurmctld.pid\n"
      "SlurmdPidFile={dir}/slurmd.pid\n"
      "SlurmctldLogFile={dir}/log/slurmctld.log\n"
      "SlurmdLogFile={dir}/log/slurmd.log\n"
      "SlurmctldDebug=info\n"
      "SlurmdDebug=info\n"
      // What the issue asks for on a VM without cgroup delegation.
      "ProctrackType=proctrack/linuxproc\n"
      "TaskPlugin=task/none\n"
      "SelectType=select/cons_tres\n"
      "SelectTypeParameters=CR_CPU_Memory\n"
      "SchedulerType=sched/backfill\n"
      "MpiDefault=none\n"
      "ReturnToService=2\n"
      // No slurmdbd here: job completions go to a text file that `sacct -c` reads.
      "AccountingStorageType=accounting_storage/none\n"
      "JobCompType=jobcomp/filetxt\n"
      "JobCompLoc={dir}/log/jobcomp.txt\n"
      "JobAcctGatherType=jobacct_gather/linux\n"
      // Finished jobs stay visible to scontrol for the tests' checks.
      "MinJobAge=600\n"
      "KillWait=10\n"
      "InactiveLimit=0\n"
      "SlurmctldTimeout=30\n"
      "SlurmdTimeout=30\n"
      "DefMemPerCPU=1024\n"
      "NodeName=localhost NodeHostname=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory} "
      "State=UNKNOWN\n"
      "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n",
      fmt::arg("ctld_port", free_loopback_port()), fmt::arg("slurmd_port", free_loopback_port()),
      fmt::arg("dir", dir.string()), fmt::arg("cpus", cpus_), fmt::arg("memory", memory_mib() * 9 / 10));
  if (!conf) throw std::runtime_error("cannot write " + conf_.string());
}

void SlurmCluster::start_daemons() {
  const fs::path dir = dir_.path();
  const std::map<std::string, std::string> env = environment();
  auto start = [&](const std::string& name, std::vector<std::string> argv) {
    fs::create_directories(dir / "log" / name);
    argv.insert(argv.begin(), program_path(name));
    // SIGTERM if this test process dies first (a ctest timeout): no daemon outlives it.
    return std::make_unique<BackgroundProcess>(argv, dir / "log" / name, env, dir, SIGTERM);
  };

  munged_ =
      start("munged",
            {"--foreground", "--force", "--socket=" + (dir / "munge/munge.socket").string(),
             "--key-file=" + (dir / "munge/munge.key").string(), "--pid-file=" + (dir / "munge/munged.pid").string(),
             "--seed-file=" + (dir / "munge/munged.seed").string(), "--log-file=" + (dir / "log/munged.log").string()});
  if (!munged_->wait_for([&] { return fs::exists(dir / "munge/munge.socket"); }, 10s))
    throw std::runtime_error("munged did not create its socket within 10 s\n" + logs());

  slurmctld_ = start("slurmctld", {"-D", "-f", conf_.string()});
  slurmd_ = start("slurmd", {"-D", "-N", "localhost", "-f", conf_.string()});
  if (!slurmd_->wait_for([&] { return node_idle(); }, 60s))
    throw std::runtime_error("the node did not become idle within 60 s\n" + logs());
}

bool SlurmCluster::node_idle() const {
  const CommandResult sinfo = run({"sinfo", "--noheader", "--format=%t"});
  return sinfo.exit_status == 0 && sinfo.out == "idle\n";
}

std::map<std::string, std::string> SlurmCluster::environment() const {
  return {{"SLURM_CONF", conf_.string()}, {kMarker, dir_.path().string()}};
}

CommandResult SlurmCluster::run(const std::vector<std::string>& argv, const fs::path& working_dir,
                                const std::map<std::string, std::string>& extra_environment) const {
  std::vector<std::string> full = argv;
  full.front() = program_path(full.front());
  std::map<std::string, std::string> env = environment();
  for (const auto& [name, value] : extra_environment) env[name] = value;
  return run_command(full, working_dir.string(), env);
}

std::vector<std::map<std::string, std::string>> scontrol_jobs(const SlurmCommand& run, const std::string& id) {
  const CommandResult show = run({"scontrol", "--oneliner", "show", "job", id});
  std::vector<std::map<std::string, std::string>> found;
  if (show.exit_status != 0) return found;
  std::istringstream lines(show.out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) found.push_back(scontrol_fields(line));
  return found;
}

bool wait_until_jobs_end(const SlurmCommand& run, const std::string& id, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto found = scontrol_jobs(run, id);
    const bool ended = !found.empty() && std::all_of(found.begin(), found.end(), [](const auto& fields) {
      const auto state = fields.find("JobState");
      return state != fields.end() && job_state_final(state->second);
    });
    if (ended) return true;
    std::this_thread::sleep_for(500ms);
  }
  return false;
}

std::vector<std::map<std::string, std::string>> SlurmCluster::jobs(const std::string& id) const {
  return scontrol_jobs([this](const std::vector<std::string>& argv) { return run(argv); }, id);
}

std::map<std::string, std::string> SlurmCluster::job(const std::string& id) const {
  const auto found = jobs(id);
  return found.empty() ? std::map<std::string, std::string>{} : found.front();
}

bool SlurmCluster::wait_for_jobs(const std::string& id, std::chrono::seconds timeout) const {
  return wait_until_jobs_end([this](const std::vector<std::string>& argv) { return run(argv); }, id, timeout);
}

std::string SlurmCluster::logs() const {
  std::string text;
  for (const char* name : {"munged.log", "slurmctld.log", "slurmd.log"}) {
    const fs::path file = dir_.path() / "log" / name;
    text += fmt::format("--- {} (last lines)\n{}", file.string(), last_lines(slurp(file), 15));
  }
  for (const char* name : {"munged", "slurmctld", "slurmd"})
    text += fmt::format("--- {} stderr\n{}", name, last_lines(slurp(dir_.path() / "log" / name / "background.err"), 5));
  return text;
}

void SlurmCluster::stop() {
  if (stopped_) return;
  stopped_ = true;
  // Jobs first, while the controller still runs, so that Slurm ends them
  // itself; then the daemons, newest first.
  if (slurmctld_ && process_alive(slurmctld_->pid())) {
    run({"scancel", "--user=" + std::to_string(::getuid())});
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      const CommandResult queue = run({"squeue", "--noheader", "--format=%i"});
      if (queue.exit_status != 0 || queue.out.empty()) break;
      std::this_thread::sleep_for(500ms);
    }
  }
  for (std::unique_ptr<BackgroundProcess>* daemon : {&slurmd_, &slurmctld_, &munged_}) {
    if (!*daemon) continue;
    (*daemon)->signal(SIGTERM);
    // A daemon that does not end on SIGTERM within 10 s is killed.
    (*daemon)->wait_until_ended(10s);
    daemon->reset();  // SIGKILL if it still runs, and reaps it
  }
  // Whatever the jobs left (slurmstepd, a batch script, MPI ranks): only
  // processes carrying this cluster's marker.
  for (int round = 0; round < 3; ++round) {
    const std::vector<pid_t> left = processes_with_environment(kMarker, dir_.path().string());
    if (left.empty()) break;
    for (const pid_t pid : left)
      if (pid != ::getpid()) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(200ms);
  }
}

}  // namespace memsweep::testing
