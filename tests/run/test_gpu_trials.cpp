// One trial per GPU, in real runs on the test NVML library's devices (four
// of 80 GiB, from the environment): real mpirun ranks, each trial a real
// program told its own device by UUID, whose "allocations" are the books
// the test NVML reads (tests/sampler/fake_nvml.cpp). The refusal when the
// devices do not go round.

#include "run/results_file.hpp"
#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace memsweep::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr int kDevices = 4;

std::string fake_uuid(int index) { return fmt::format("GPU-00000000-1111-2222-3333-{:012}", index); }

std::map<std::string, std::string> fake_gpu_environment(const fs::path& books) {
  return {{"OMP_NUM_THREADS", "1"},
          {"MEMSWEEP_TEST_NVML_LIBRARY", MEMSWEEP_FAKE_NVML_PATH},
          {"MEMSWEEP_TEST_GPUS", std::to_string(kDevices)},
          {"MEMSWEEP_TEST_GPU_BOOKS", books.string()},
          {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}};
}

// A program that says what it was given, then "allocates" batch_size MiB
// on its device for long enough that the per-process reads (every 100 ms)
// see it.
std::string holder_sweep(const fs::path& books) {
  return fmt::format(
      "[sweep]\nname = \"gpu-trials\"\nseed = 1\n\n"
      "[programs.holder]\ncommand = [\"/bin/sh\", \"-c\", \"echo visible=$CUDA_VISIBLE_DEVICES gpu={{gpu}}; "
      "mkdir -p {0}/$CUDA_VISIBLE_DEVICES && echo $(({{batch_size}} * 1048576)) > {0}/$CUDA_VISIBLE_DEVICES/$$ && "
      "sleep 0.8; rm -f {0}/$CUDA_VISIBLE_DEVICES/$$\"]\n\n"
      "[defaults]\nprogram = \"holder\"\n\n[grid]\nbatch_size = [3, 5, 7, 9]\n",
      books.string());
}

std::string first_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

struct GpuRun {
  CommandResult result;
  fs::path out;
};

GpuRun run_on_ranks(const TempDir& dir, const std::string& name, int ranks,
                    std::map<std::string, std::string> environment) {
  const fs::path books = dir.path() / "books";
  fs::create_directories(books);
  const std::string sweep = dir.write(name + ".toml", holder_sweep(books)).string();
  const fs::path out = dir.path() / (name + ".h5");
  const CommandResult result = run_command(
      on_ranks(MEMSWEEP_MPIEXEC, ranks, memsweep_argv({"run", sweep, "-o", out.string(), "-q"})), "", environment);
  return {result, out};
}

// Each trial's row and its program's own words agree on its device, and
// the two ranks' devices differ.
void expect_own_devices(const fs::path& out, const std::map<int, int>& device_of_rank) {
  const TsvTable trials = h5py_table(out, "trials");
  ASSERT_EQ(trials.rows.size(), 4U);
  std::set<std::string> seen;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    SCOPED_TRACE(trials.at(row, "batch_size"));
    EXPECT_EQ(trials.at(row, "status"), "ok") << trials.at(row, "message");
    const int rank = std::stoi(trials.at(row, "rank"));
    ASSERT_EQ(device_of_rank.count(rank), 1U) << rank;
    const int device = device_of_rank.at(rank);
    EXPECT_EQ(trials.at(row, "gpu_uuids"), fake_uuid(device));
    EXPECT_EQ(trials.at(row, "gpu_devices"), std::to_string(device)) << "NVML read the trial's device alone";
    const std::string log =
        (out.parent_path() / (out.stem().string() + ".logs") / (trials.at(row, "trial_id") + "-0.out")).string();
    EXPECT_EQ(first_line(log), fmt::format("visible={} gpu=0", fake_uuid(device)));
    // The tree's own use on its device: what the program put in the books.
    EXPECT_EQ(std::stoll(trials.at(row, "gpu_peak")), std::stoll(trials.at(row, "batch_size")) << 20);
    EXPECT_EQ(trials.at(row, "gpu_peak_source"), "tree");
    EXPECT_EQ(trials.at(row, "gpu_name"), "Fake GPU 80GB");
    EXPECT_EQ(trials.at(row, "gpu_total"), std::to_string(80LL << 30));
    EXPECT_EQ(trials.at(row, "gpu_driver"), "999.12.34");
    EXPECT_EQ(trials.at(row, "cuda_version"), "12.2");
    EXPECT_EQ(trials.at(row, "cuda_alloc_conf"), "expandable_segments:True");
    seen.insert(trials.at(row, "gpu_uuids"));
  }
  EXPECT_EQ(seen.size(), 2U) << "each rank's trials on their own device";
}

TEST(GpuTrials, TwoRanksOnFourDevicesEachRunTheirTrialsOnTheirOwnDeviceByUuid) {
  const TempDir dir;
  const GpuRun run = run_on_ranks(dir, "nvml", 3, fake_gpu_environment(dir.path() / "books"));
  ASSERT_EQ(run.result.exit_status, kOk) << run.result.err;
  // NVML's order: rank 1 the first device, rank 2 the second.
  expect_own_devices(run.out, {{1, 0}, {2, 1}});
}

TEST(GpuTrials, TheJobsCudaVisibleDevicesByUuidAreDealtInTheirOrder) {
  const TempDir dir;
  std::map<std::string, std::string> environment = fake_gpu_environment(dir.path() / "books");
  environment["CUDA_VISIBLE_DEVICES"] = fmt::format("{},{}", fake_uuid(3), fake_uuid(1));
  const GpuRun run = run_on_ranks(dir, "visible", 3, environment);
  ASSERT_EQ(run.result.exit_status, kOk) << run.result.err;
  expect_own_devices(run.out, {{1, 3}, {2, 1}});
}

TEST(GpuTrials, FiveTrainingRanksOnFourDevicesAreRefusedAtTheStartInOneLine) {
  const TempDir dir;
  const GpuRun run = run_on_ranks(dir, "crowded", 6, fake_gpu_environment(dir.path() / "books"));
  EXPECT_EQ(run.result.exit_status, kBadInput) << run.result.err;
  const std::string& err = run.result.err;
  EXPECT_THAT(err, HasSubstr("5 ranks train on"));
  EXPECT_THAT(err, HasSubstr("the node has 4 (0,1,2,3 from NVML)"));
  EXPECT_THAT(err, HasSubstr("run at most 4 training ranks"));
  std::istringstream lines(err);
  int naming = 0;
  for (std::string line; std::getline(lines, line);) naming += line.find("5 ranks train on") != std::string::npos;
  EXPECT_EQ(naming, 1) << "rank 0 alone prints it: " << err;
  EXPECT_FALSE(fs::exists(run.out)) << "nothing is written before the ranks agree";
}

TEST(GpuTrials, ThePlanSaysWhichTrialsNeedGpusAndHowManyTheNodeOffers) {
  const TempDir dir;
  const std::string sweep = dir.write("plan.toml", holder_sweep(dir.path() / "books")).string();
  const CommandResult on_gpus =
      run_command(memsweep_argv({"plan", sweep}), "", fake_gpu_environment(dir.path() / "books"));
  ASSERT_EQ(on_gpus.exit_status, kOk) << on_gpus.err;
  EXPECT_THAT(on_gpus.out,
              HasSubstr("gpus: 4 trials need 1 GPU each at most; this node offers 4 (0,1,2,3 from NVML): at most 4 "
                        "training ranks on a node like it"));
  std::map<std::string, std::string> no_gpus = fake_gpu_environment(dir.path() / "books");
  no_gpus["CUDA_VISIBLE_DEVICES"] = "";  // a job given none
  const CommandResult without = run_command(memsweep_argv({"plan", sweep}), "", no_gpus);
  ASSERT_EQ(without.exit_status, kOk) << without.err;
  // The holder names {gpu}: it needs one wherever it runs.
  EXPECT_THAT(
      without.out,
      HasSubstr("gpus: 4 trials need 1 GPU each at most; this node has no GPU: memsweep run refuses them here"));
}

// ---- a GPU limit, held by a reserve through the test CUDA driver ----

constexpr long long kMiB = 1LL << 20;
constexpr long long kDeviceBytes = 8LL << 30;
constexpr long long kContextBytes = 64 * kMiB;  // the test CUDA driver's context (fake_cuda.cpp)

// The test devices at 8 GiB, and the CUDA driver library the rank's reserve loads.
std::map<std::string, std::string> limited_environment(const TempDir& dir, const std::string& rank_cuda_library) {
  const fs::path books = dir.path() / "books";
  fs::create_directories(books);
  std::map<std::string, std::string> environment = fake_gpu_environment(books);
  environment["MEMSWEEP_TEST_GPU_MEMORY"] = std::to_string(kDeviceBytes);
  environment["MEMSWEEP_TEST_CUDA_LIBRARY"] = rank_cuda_library;
  return environment;
}

// One rank alone (it trains), on devices of 8 GiB; each trial a program
// that allocates params.mib MiB through the test CUDA driver and holds it.
GpuRun run_limited(const TempDir& dir, const std::string& name, const std::string& limit, const std::string& mibs,
                   const std::string& rank_cuda_library) {
  const std::map<std::string, std::string> environment = limited_environment(dir, rank_cuda_library);
  const std::string sweep =
      dir.write(name + ".toml", fmt::format("[sweep]\nname = \"{}\"\nseed = 1\n\n"
                                            "[programs.alloc]\ncommand = [\"{}\", \"{{mib}}\", \"1.0\"]\n"
                                            "env = {{ MEMSWEEP_TEST_CUDA_LIBRARY = \"{}\" }}\n\n"
                                            "[defaults]\nprogram = \"alloc\"\ngpu_limit = \"{}\"\n\n"
                                            "[grid]\nparams.mib = [{}]\n",
                                            name, MEMSWEEP_FAKE_CUDA_PROGRAM, MEMSWEEP_FAKE_CUDA_PATH, limit, mibs))
          .string();
  const fs::path out = dir.path() / (name + ".h5");
  return {run_command(memsweep_argv({"run", sweep, "-o", out.string(), "-q"}), "", environment), out};
}

std::size_t row_of_mib(const TsvTable& trials, int mib) {
  for (std::size_t row = 0; row < trials.rows.size(); ++row)
    if (trials.at(row, "params").find(fmt::format("\"mib\":{}", mib)) != std::string::npos) return row;
  ADD_FAILURE() << "no trial of " << mib << " MiB";
  return 0;
}

TEST(GpuLimit, AReserveLeavesTheProgramTheLimitSoThatPastItItMeetsARealOutOfMemory) {
  const TempDir dir;
  const GpuRun run = run_limited(dir, "reserve", "1GiB", "512, 2048", MEMSWEEP_FAKE_CUDA_PATH);
  ASSERT_EQ(run.result.exit_status, kOk) << run.result.err;
  const TsvTable trials = h5py_table(run.out, "trials");
  ASSERT_EQ(trials.rows.size(), 2U);
  const std::size_t fits = row_of_mib(trials, 512);
  EXPECT_EQ(trials.at(fits, "status"), "ok") << trials.at(fits, "message");
  EXPECT_EQ(trials.at(fits, "gpu_limit"), std::to_string(1LL << 30));
  EXPECT_EQ(trials.at(fits, "gpu_limit_mechanism"), "reserve");
  // The helper's own context is on the device too: it holds the rest.
  EXPECT_EQ(std::stoll(trials.at(fits, "gpu_reserved")), kDeviceBytes - kContextBytes - (1LL << 30));
  // The program's view: the limit less what it already uses, its context.
  const fs::path log = dir.path() / "reserve.logs" / (trials.at(fits, "trial_id") + "-0.out");
  EXPECT_EQ(first_line(log), fmt::format("free {} total {}", (1LL << 30) - kContextBytes, kDeviceBytes));
  EXPECT_EQ(std::stoll(trials.at(fits, "gpu_peak")), 512 * kMiB + kContextBytes) << "the tree's, context included";

  const std::size_t too_big = row_of_mib(trials, 2048);
  EXPECT_EQ(trials.at(too_big, "reported_oom"), "1") << "the program's own CUDA out-of-memory";
  EXPECT_EQ(trials.at(too_big, "status"), "failed");
  EXPECT_THAT(trials.at(too_big, "message"), HasSubstr("CUDA out of memory"));
  EXPECT_LE(std::stoll(trials.at(too_big, "gpu_peak")), 1LL << 30) << "it never got past the limit";
  // Each reserve let go once its trial ended: no process holds anything
  // on the device any more.
  for (const fs::directory_entry& entry : fs::directory_iterator(dir.path() / "books" / fake_uuid(0))) {
    const std::string name = entry.path().filename().string();
    EXPECT_NE(::kill(std::stoi(name), 0), 0) << "process " << name << " still holds " << first_line(entry.path());
  }
}

TEST(GpuLimit, WithoutACudaDriverTheLimitIsWatchedAndTheRankStopsATrialPastIt) {
  const TempDir dir;
  const GpuRun run = run_limited(dir, "watched", "1GiB", "2048", (dir.path() / "no-libcuda.so").string());
  ASSERT_EQ(run.result.exit_status, kOk) << run.result.err;
  const TsvTable trials = h5py_table(run.out, "trials");
  ASSERT_EQ(trials.rows.size(), 1U);
  EXPECT_EQ(trials.at(0, "gpu_limit_mechanism"), "watch");
  EXPECT_EQ(trials.at(0, "status"), "over_budget") << trials.at(0, "message");
  EXPECT_EQ(trials.at(0, "end_cause"), "gpu");
  EXPECT_THAT(trials.at(0, "message"), HasSubstr("passed its GPU limit of 1.00 GiB"));
  EXPECT_THAT(trials.at(0, "message"), HasSubstr("the reserve failed"));
  EXPECT_EQ(trials.at(0, "gpu_reserved"), "-1") << "nothing held";
}

TEST(GpuLimit, TheWholeDeviceNeedsNoReserve) {
  const TempDir dir;
  const GpuRun run = run_limited(dir, "whole", "device", "256", MEMSWEEP_FAKE_CUDA_PATH);
  ASSERT_EQ(run.result.exit_status, kOk) << run.result.err;
  const TsvTable trials = h5py_table(run.out, "trials");
  ASSERT_EQ(trials.rows.size(), 1U);
  EXPECT_EQ(trials.at(0, "status"), "ok") << trials.at(0, "message");
  EXPECT_EQ(trials.at(0, "gpu_limit"), std::to_string(kDeviceBytes));
  EXPECT_EQ(trials.at(0, "gpu_limit_mechanism"), "device");
  EXPECT_EQ(trials.at(0, "gpu_reserved"), "-1");
  const fs::path log = dir.path() / "whole.logs" / (trials.at(0, "trial_id") + "-0.out");
  EXPECT_EQ(first_line(log), fmt::format("free {} total {}", kDeviceBytes - kContextBytes, kDeviceBytes));
}

// ---- a [search] within a GPU limit ----

// The largest params.mib that trains within 1 GiB and within the whole
// 8 GiB device: the program's context (64 MiB) comes out of the limit, so
// the answers are 960 and 8128 MiB, each a trial that ran, and the next
// value a real CUDA out-of-memory under the reserve (or the device's own).
TEST(GpuSearch, FindsTheLargestAllocationThatTrainsWithinTheGpuLimitAndOnTheWholeDevice) {
  const TempDir dir;
  const std::map<std::string, std::string> environment = limited_environment(dir, MEMSWEEP_FAKE_CUDA_PATH);
  const std::string sweep =
      dir.write("search.toml", fmt::format("[sweep]\nname = \"gpu-search\"\nseed = 1\n\n"
                                           "[programs.alloc]\ncommand = [\"{}\", \"{{mib}}\", \"0.3\"]\n\n"
                                           "[[trial]]\nprogram = \"alloc\"\n\n"
                                           "[search]\naxis = \"params.mib\"\nrange = [1, 16384]\n"
                                           "limit = [\"1GiB\", \"device\"]\ndevice = \"gpu\"\nstrategy = \"bisect\"\n"
                                           "resolution = 0\nmax_trials = 24\n",
                                           MEMSWEEP_FAKE_CUDA_PROGRAM))
          .string();
  const fs::path out = dir.path() / "search.h5";
  const CommandResult run = run_command(memsweep_argv({"run", sweep, "-o", out.string(), "-q"}), "", environment);
  ASSERT_EQ(run.exit_status, kOk) << run.err;
  const TsvTable searches = h5py_table(out, "searches");
  ASSERT_EQ(searches.rows.size(), 2U);
  const std::map<std::string, std::pair<std::string, std::string>> expected{
      {std::to_string(1LL << 30), {"960", "reserve"}}, {std::to_string(kDeviceBytes), {"8128", "device"}}};
  for (std::size_t row = 0; row < searches.rows.size(); ++row) {
    SCOPED_TRACE(searches.at(row, "limit"));
    const auto want = expected.find(searches.at(row, "limit"));
    ASSERT_NE(want, expected.end()) << "\"device\" is the device's size";
    EXPECT_EQ(searches.at(row, "status"), "found") << searches.at(row, "message");
    EXPECT_EQ(searches.at(row, "fits"), want->second.first);
    EXPECT_EQ(searches.at(row, "fits_verified"), "1");
    EXPECT_EQ(std::stoll(searches.at(row, "does_not_fit")), std::stoll(want->second.first) + 1);
    EXPECT_EQ(searches.at(row, "enforced_by"), want->second.second);
    EXPECT_EQ(searches.at(row, "device"), "gpu");
    EXPECT_EQ(searches.at(row, "gpu_name"), "Fake GPU 8GB");
    EXPECT_EQ(searches.at(row, "gpu_total"), std::to_string(kDeviceBytes));
    EXPECT_NEAR(std::stod(searches.at(row, "fit_b_mib")), 1.0, 0.01) << "a MiB of GPU per MiB allocated";
  }
  // The capacity table names the device each answer is of.
  const CommandResult summary = run_command(memsweep_argv({"summary", out.string()}), "", environment);
  ASSERT_EQ(summary.exit_status, kOk) << summary.err;
  EXPECT_THAT(summary.out, HasSubstr("Fake GPU 8GB (8 GiB)"));
  EXPECT_THAT(summary.out, HasSubstr("960 (verified)"));
  EXPECT_THAT(summary.out, HasSubstr("8128 (verified)"));
  // Every probe that fit trained within its limit; none past it fit.
  const TsvTable trials = h5py_table(out, "trials");
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    EXPECT_EQ(trials.at(row, "search_device"), "gpu");
    if (trials.at(row, "status") == "ok")
      EXPECT_LE(std::stoll(trials.at(row, "gpu_peak")), std::stoll(trials.at(row, "gpu_limit")));
  }
}

}  // namespace
}  // namespace memsweep::testing
