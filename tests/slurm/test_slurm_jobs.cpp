// The job scripts (jobs/sweep.sbatch, jobs/submit) against a real Slurm:
// munged, slurmctld and slurmd started on loopback for each test by
// SlurmCluster, jobs submitted with sbatch as a user would, results read
// back with h5py.

#include "run/results_file.hpp"
#include "slurm/slurm_cluster.hpp"
#include "support/background_process.hpp"
#include "support/file_text.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

namespace memsweep::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

const std::string kSourceDir = MEMSWEEP_SOURCE_DIR;
const std::string kBatchScript = kSourceDir + "/jobs/sweep.sbatch";
const std::string kSubmit = kSourceDir + "/jobs/submit";

// A sweep of `trials` small MLPs on the synthetic dataset; `epochs` sets
// how long each trains (about 0.13 s per epoch on one core of the CI VM).
std::string synthetic_sweep(const std::string& name, int repeats, int epochs) {
  return "[sweep]\nname = \"" + name + "\"\nseed = 1\nrepeats = " + std::to_string(repeats) +
         "\n[defaults]\n"
         "dataset = \"synthetic\"\n"
         "synthetic = { shape = [1, 28, 28], classes = 10, train_size = 6000, test_size = 500 }\n"
         "learning_rate = 0.05\n"
         "batch_size = 32\n"
         "hidden = [256, 256]\n"
         "[grid]\n"
         "epochs = [" +
         std::to_string(epochs) + "]\n";
}

class SlurmJobs : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = std::make_unique<SlurmCluster>();
    // The tests run as root (CI); Open MPI's mpirun refuses root without these.
    // A user's job needs neither.
    job_env_ = {{"MEMSWEEP", MEMSWEEP_EXECUTABLE},
                {"OMPI_ALLOW_RUN_AS_ROOT", "1"},
                {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
                {"OMP_NUM_THREADS", "1"}};
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << cluster_->logs();
    cluster_->stop();
  }

  // sbatch --parsable ...: the job id, or fails the test.
  std::string sbatch(const std::vector<std::string>& args, const std::map<std::string, std::string>& extra = {}) {
    std::vector<std::string> argv{"sbatch", "--parsable"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> env = job_env_;
    for (const auto& [name, value] : extra) env[name] = value;
    const CommandResult result = cluster_->run(argv, work_.path(), env);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    std::string id = result.out.substr(0, result.out.find_first_of(";\n"));
    return id;
  }

  CommandResult submit(const std::vector<std::string>& args) {
    std::vector<std::string> argv{kSubmit};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> env = cluster_->environment();
    for (const auto& [name, value] : job_env_) env[name] = value;
    return run_command(argv, work_.path().string(), env);
  }

  std::map<std::string, std::string> wait_for_job(const std::string& id, std::chrono::seconds timeout) {
    EXPECT_TRUE(cluster_->wait_for_jobs(id, timeout))
        << "job " << id << " did not end within " << timeout.count() << " s; log:\n"
        << logs();
    return cluster_->job(id);
  }

  // Every job log in the work folder (Slurm writes NAME-ID.out there).
  std::string logs() const {
    std::string text;
    for (const auto& entry : fs::directory_iterator(work_.path()))
      if (entry.path().extension() == ".out") text += "--- " + entry.path().string() + "\n" + slurp(entry.path());
    return text;
  }

  // `sacct -c` reads the job-completion file (no slurmdbd here): one record
  // per start of the job, oldest first, as "STATE|EXITCODE".
  std::vector<std::string> completion_records(const std::string& id) {
    const CommandResult sacct = cluster_->run(
        {"sacct", "--completion", "--jobs=" + id, "--noheader", "--parsable2", "--format=state,exitcode"});
    EXPECT_EQ(sacct.exit_status, 0) << sacct.err;
    std::vector<std::string> records;
    std::istringstream lines(sacct.out);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) records.push_back(line);
    return records;
  }

  std::unique_ptr<SlurmCluster> cluster_;
  TempDir work_;
  std::map<std::string, std::string> job_env_;
};

// Whether `pid` is a live process: a zombie has ended, only its parent has
// not collected it yet.
bool process_running(pid_t pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// How many rows of each trial have a final status (ok, failed, diverged,
// over_budget, killed), by trial id.
std::map<std::string, int> final_rows_per_trial(const TsvTable& trials) {
  static const std::set<std::string> final_statuses{"ok", "failed", "diverged", "over_budget", "killed"};
  std::map<std::string, int> counts;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    counts.try_emplace(trials.at(row, "trial_id"), 0);
    if (final_statuses.count(trials.at(row, "status")) != 0) ++counts[trials.at(row, "trial_id")];
  }
  return counts;
}

TEST(SlurmClusterFixture, StopEndsExactlyTheProcessesItStarted) {
  const TempDir outside;
  // A process the cluster did not start, running the same kind of program
  // as a job: it must survive stop().
  BackgroundProcess bystander({"/bin/sleep", "300"}, outside.path());
  auto cluster = std::make_unique<SlurmCluster>();
  const TempDir work;
  const CommandResult submitted = cluster->run({"sbatch", "--parsable", "--wrap=sleep 300"}, work.path());
  ASSERT_EQ(submitted.exit_status, 0) << submitted.err;
  const std::string id = submitted.out.substr(0, submitted.out.find('\n'));
  const std::string marker = cluster->environment().at("MEMSWEEP_TEST_SLURM_CLUSTER");
  // The daemons, the job's slurmstepd, its batch shell and its `sleep` all
  // carry the marker. Slurm says RUNNING before slurmstepd has started the
  // script, so wait for the job's own `sleep` to appear.
  const auto job_sleeping = [&] {
    for (const pid_t pid : processes_with_environment("MEMSWEEP_TEST_SLURM_CLUSTER", marker))
      if (slurp("/proc/" + std::to_string(pid) + "/comm") == "sleep\n") return true;
    return false;
  };
  ASSERT_TRUE(bystander.wait_for(job_sleeping, 30s)) << cluster->job(id)["JobState"] << "\n" << cluster->logs();
  const std::vector<pid_t> started = processes_with_environment("MEMSWEEP_TEST_SLURM_CLUSTER", marker);
  ASSERT_GE(started.size(), 5u);

  cluster->stop();

  for (const pid_t pid : started) EXPECT_FALSE(process_running(pid)) << "process " << pid << " survived stop()";
  EXPECT_TRUE(processes_with_environment("MEMSWEEP_TEST_SLURM_CLUSTER", marker).empty());
  EXPECT_TRUE(process_running(bystander.pid())) << "stop() ended a process it did not start";
}

TEST_F(SlurmJobs, SubmitRunsATinySweepToCompletion) {
  work_.write("tiny.toml", synthetic_sweep("tiny", 4, 2));
  const CommandResult submitted = submit({"tiny.toml", "--ntasks", "2", "--time", "5", "--mem-per-cpu", "1G"});
  ASSERT_EQ(submitted.exit_status, 0) << submitted.out << submitted.err;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(submitted.out, match, std::regex("submitted job (\\d+)"))) << submitted.out;
  const std::string id = match[1];
  const fs::path results = fs::weakly_canonical(work_.path() / "tiny.h5");
  EXPECT_THAT(submitted.out, HasSubstr("results: " + results.string()));
  EXPECT_THAT(submitted.out, HasSubstr("tiny-" + id + ".out"));

  const auto job = wait_for_job(id, 120s);
  EXPECT_EQ(job.at("JobState"), "COMPLETED") << logs();
  EXPECT_EQ(job.at("ExitCode"), "0:0");
  EXPECT_EQ(job.at("Restarts"), "0");
  EXPECT_EQ(completion_records(id), std::vector<std::string>{"COMPLETED|0:0"});

  // The log is named by job name and id and ends with the script's verdict.
  EXPECT_THAT(slurp(work_.path() / ("tiny-" + id + ".out")), HasSubstr("the sweep is complete"));
  // Four trials (four repeats), each with one final row, trained by rank 1:
  // two ranks under mpirun, rank 0 writing.
  const TsvTable trials = h5py_table(results, "trials");
  const auto finals = final_rows_per_trial(trials);
  EXPECT_EQ(finals.size(), 4u);
  for (const auto& [trial, count] : finals) EXPECT_EQ(count, 1) << trial;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    EXPECT_EQ(trials.at(row, "status"), "ok");
    EXPECT_EQ(trials.at(row, "rank"), "1");
  }
  EXPECT_EQ(h5py_attributes(results).at("ranks"), "2");
}

TEST_F(SlurmJobs, SrunLaunchesTheRanksAndCpusPerTaskSetsThreads) {
  work_.write("srun.toml", synthetic_sweep("srun", 2, 1));
  // Open MPI 4 speaks PMIx, which Debian's Slurm offers as --mpi=pmix.
  const std::string id =
      sbatch({"--ntasks=2", "--cpus-per-task=1", "--mem-per-cpu=1G", kBatchScript, "srun.toml", "-o", "srun.h5"},
             {{"MEMSWEEP_LAUNCHER", "srun"}, {"MEMSWEEP_SRUN_MPI", "pmix"}});
  const auto job = wait_for_job(id, 120s);
  EXPECT_EQ(job.at("JobState"), "COMPLETED") << logs();
  const std::string log = slurp(work_.path() / ("memsweep-" + id + ".out"));
  EXPECT_THAT(log, HasSubstr("srun --mpi=pmix"));
  // One MPI world of two ranks, not two single-process runs.
  EXPECT_EQ(h5py_attributes(work_.path() / "srun.h5").at("ranks"), "2");
  EXPECT_EQ(final_rows_per_trial(h5py_table(work_.path() / "srun.h5", "trials")).size(), 2u);

  // One rank with all the node's CPUs: memsweep is told to train on them.
  work_.write("threads.toml", synthetic_sweep("threads", 1, 1));
  const std::string cpus = std::to_string(cluster_->cpus());
  const std::string second =
      sbatch({"--ntasks=1", "--cpus-per-task=" + cpus, "--mem-per-cpu=1G", kBatchScript, "threads.toml"});
  EXPECT_EQ(wait_for_job(second, 120s).at("JobState"), "COMPLETED") << logs();
  EXPECT_THAT(slurp(work_.path() / ("memsweep-" + second + ".out")), HasSubstr("--threads " + cpus));
}

TEST_F(SlurmJobs, TimeLimitWarningRequeuesAndResumesUntilEveryTrialIsDone) {
  // 16 trials of 4 s on one training rank: longer than the one-minute
  // limit. Slurm sends the warning when the time left falls under 10 s +
  // its 30 s check period, i.e. 20 to 50 s into each start. The trials are
  // a program that sleeps, so that their length does not depend on the CPU
  // (16 trained ones of "about 4 s" took 1.2 s each on a Zen 5 and the
  // sweep ended before the warning).
  std::string long_sweep =
      "[sweep]\nname = \"long\"\n[defaults]\ndataset = \"synthetic\"\n"
      "program = [\"/bin/sleep\", \"4\"]\n[grid]\nbatch_size = [";
  for (int size = 1; size <= 16; ++size) long_sweep += std::to_string(size) + (size < 16 ? ", " : "]\n");
  work_.write("long.toml", long_sweep);
  const std::string id = sbatch(
      {"--ntasks=2", "--mem-per-cpu=1G", "--time=1", "--signal=B:USR1@10", kBatchScript, "long.toml", "-o", "long.h5"});
  const auto job = wait_for_job(id, 420s);
  const std::string log = logs();
  EXPECT_EQ(job.at("JobState"), "COMPLETED") << log;
  const int restarts = std::stoi(job.at("Restarts"));
  EXPECT_GE(restarts, 1) << log;
  EXPECT_THAT(log, HasSubstr("requeuing job " + id));
  EXPECT_THAT(log, HasSubstr("--resume"));

  // Every trial exactly once with a final status, whatever was interrupted.
  const TsvTable trials = h5py_table(work_.path() / "long.h5", "trials");
  const auto finals = final_rows_per_trial(trials);
  EXPECT_EQ(finals.size(), 16u);
  for (const auto& [trial, count] : finals) EXPECT_EQ(count, 1) << trial;
  for (std::size_t row = 0; row < trials.rows.size(); ++row)
    EXPECT_THAT(trials.at(row, "status"), ::testing::AnyOf("ok", "interrupted"));
  // One /runs row per start of the job: the first created the file, the rest resumed it.
  const TsvTable runs = h5py_table(work_.path() / "long.h5", "runs");
  ASSERT_EQ(runs.rows.size(), static_cast<std::size_t>(restarts + 1));
  for (std::size_t row = 1; row < runs.rows.size(); ++row)
    EXPECT_THAT(runs.at(row, "command_line"), HasSubstr("--resume"));
  // Slurm's own record: one per start, the last one completed.
  const std::vector<std::string> records = completion_records(id);
  ASSERT_EQ(records.size(), static_cast<std::size_t>(restarts + 1));
  EXPECT_EQ(records.back(), "COMPLETED|0:0");
}

TEST_F(SlurmJobs, ArrayModeRunsOnePartPerTaskIntoItsOwnFile) {
  // Two datasets (synthetic images of two shapes), split by dataset: two
  // array tasks of one rank each, side by side on the node.
  work_.write("two.toml",
              "[sweep]\nname = \"two\"\nseed = 1\n"
              "[defaults]\n"
              "learning_rate = 0.05\nepochs = 1\nhidden = [32]\n"
              "[grid]\n"
              "dataset = [\"synthetic\"]\n"
              "synthetic = [{ shape = [1, 28, 28], train_size = 2000, test_size = 200 },\n"
              "             { shape = [3, 16, 16], train_size = 2000, test_size = 200 }]\n"
              "batch_size = [32, 64]\n");
  const CommandResult submitted =
      submit({"two.toml", "--split-by", "dataset", "--ntasks", "1", "--mem-per-cpu", "1G", "--time", "5"});
  ASSERT_EQ(submitted.exit_status, 0) << submitted.out << submitted.err;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(submitted.out, match, std::regex("submitted job (\\d+)"))) << submitted.out;
  const std::string id = match[1];

  ASSERT_TRUE(cluster_->wait_for_jobs(id, 180s)) << logs();
  const auto tasks = cluster_->jobs(id);
  ASSERT_EQ(tasks.size(), 2u) << submitted.out;
  for (const auto& task : tasks) EXPECT_EQ(task.at("JobState"), "COMPLETED") << logs();

  // One file per part, named by the part, each with that dataset's two trials.
  const std::map<std::string, std::string> files{{"two.dataset-synthetic_1x28x28.h5", "dataset=synthetic:1x28x28"},
                                                 {"two.dataset-synthetic_3x16x16.h5", "dataset=synthetic:3x16x16"}};
  for (const auto& [file, part] : files) {
    SCOPED_TRACE(file);
    const fs::path path = work_.path() / file;
    ASSERT_TRUE(fs::exists(path)) << submitted.out << logs();
    EXPECT_THAT(submitted.out, HasSubstr(fs::weakly_canonical(path).string()));
    EXPECT_EQ(h5py_attributes(path).at("part"), part);
    const TsvTable trials = h5py_table(path, "trials");
    const auto finals = final_rows_per_trial(trials);
    EXPECT_EQ(finals.size(), 2u);
    for (const auto& [trial, count] : finals) EXPECT_EQ(count, 1) << trial;
    for (std::size_t row = 0; row < trials.rows.size(); ++row) EXPECT_EQ(trials.at(row, "status"), "ok");
  }
  // Both files read together: summary lists all four trials.
  const CommandResult summary = run_command(
      {MEMSWEEP_EXECUTABLE, "summary", "two.dataset-synthetic_1x28x28.h5", "two.dataset-synthetic_3x16x16.h5"},
      work_.path().string());
  EXPECT_EQ(summary.exit_status, 0) << summary.err;
  EXPECT_THAT(summary.out, HasSubstr("4 trials")) << summary.out;
}

// A trial that kills its rank before any of its samples reach the file
// leaves no trace for the rule of two: the job is requeued after each loss,
// and stops once MEMSWEEP_MAX_IDLE_REQUEUES starts in a row finished no
// trial, saying why.
TEST_F(SlurmJobs, RequeuesWithoutATrialFinishingStopAfterTheLimit) {
  work_.write("doomed.toml",
              "[sweep]\nname = \"doomed\"\n[defaults]\ndataset = \"synthetic\"\n"
              "program = [\"/bin/sh\", \"-c\", \"kill -9 $PPID; sleep 30\"]\n[grid]\nbatch_size = [1]\n");
  const std::string id =
      sbatch({"--ntasks=2", "--mem-per-cpu=1G", kBatchScript, "doomed.toml"}, {{"MEMSWEEP_MAX_IDLE_REQUEUES", "2"}});
  const auto job = wait_for_job(id, 180s);
  const std::string log = slurp(work_.path() / ("memsweep-" + id + ".out"));
  EXPECT_EQ(job.at("Restarts"), "1") << log;
  EXPECT_NE(job.at("JobState"), "COMPLETED") << log;
  EXPECT_THAT(log, HasSubstr("requeuing job " + id + " to run them again"));
  EXPECT_THAT(log, HasSubstr("no trial finished in the last 2 starts: not requeued"));
}

TEST_F(SlurmJobs, BadInputIsNeitherSubmittedNorRequeued) {
  // A sweep file with an error: submit checks it and submits nothing.
  work_.write("bad.toml", "[sweep]\nname = \"bad\"\n[defaults]\nbatch_size = -3\n[grid]\nepochs = [1]\n");
  const CommandResult rejected = submit({"bad.toml"});
  EXPECT_EQ(rejected.exit_status, 2);
  EXPECT_THAT(rejected.err, HasSubstr("bad.toml:4"));
  EXPECT_THAT(rejected.err, HasSubstr("not submitted"));
  const CommandResult queue = cluster_->run({"squeue", "--noheader"});
  EXPECT_EQ(queue.out, "");

  // A results file already there: refused before submitting, file untouched.
  work_.write("ok.toml", synthetic_sweep("ok", 1, 1));
  const fs::path existing = work_.write("ok.h5", "not mine to replace");
  const CommandResult exists = submit({"ok.toml"});
  EXPECT_EQ(exists.exit_status, 2);
  EXPECT_THAT(exists.err, HasSubstr("ok.h5 exists"));
  EXPECT_EQ(slurp(existing), "not mine to replace");

  // A job whose run fails for a real error (its sweep file is gone by the
  // time it runs) fails once and is not requeued.
  const std::string id = sbatch({"--ntasks=1", "--mem-per-cpu=1G", kBatchScript, "missing.toml"});
  const auto job = wait_for_job(id, 60s);
  EXPECT_EQ(job.at("JobState"), "FAILED");
  EXPECT_EQ(job.at("ExitCode"), "2:0");
  EXPECT_EQ(job.at("Restarts"), "0");
  EXPECT_THAT(slurp(work_.path() / ("memsweep-" + id + ".out")), HasSubstr("not requeued"));
}

}  // namespace
}  // namespace memsweep::testing
