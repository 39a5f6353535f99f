// Rank 0's ingest across nodes over TCP against the same ranks on one node,
// in one run (docs/cluster.md, Figures): a VirtualCluster of three nodes,
// rank 0 on n1 and 8 workers on n2 and n3 (4 each), then all 9 ranks on
// n1; each time a sweep of short program trials sampled every millisecond.
// Prints, per layout and repeat, the /samples rows rank 0 stored per second
// of the sweep, then medians and their ratio. Not a test: run it by hand
// (as root, after building memsweep_tests):
//
//   build/tests/memsweep_cluster_ingest_bench [REPEATS]   (default 3)

#include "cluster/virtual_cluster.hpp"
#include "run/results_file.hpp"
#include "support/file_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using memsweep::testing::VirtualCluster;
using namespace std::chrono_literals;

struct Layout {
  std::string name;
  std::string hosts;       // mpirun -H: rank 0 first
  std::string transports;  // OMPI_MCA_btl, empty for Open MPI's choice
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

struct Ingested {
  double rows_per_second = 0;    // rows of /samples over the sweep's wall time
  double samples_per_trial = 0;  // of the 500 a 0.5 s trial has at 1 ms
  double trial_seconds = 0;      // a trial's own wall time, on average
  double sweep_seconds = 0;
};

// From the file's own clock: the first trial's start to the last one's end.
Ingested ingested(const fs::path& results) {
  const memsweep::testing::TsvTable trials = memsweep::testing::h5py_table(results, "trials");
  double first = 1e300;
  double last = 0;
  double rows = 0;
  double trial_seconds = 0;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    first = std::min(first, trials.number(row, "start_time"));
    last = std::max(last, trials.number(row, "end_time"));
    rows += trials.number(row, "samples");
    trial_seconds += trials.number(row, "wall_seconds");
  }
  const double count = std::max<double>(1.0, static_cast<double>(trials.rows.size()));
  return {last > first ? rows / (last - first) : 0.0, rows / count, trial_seconds / count, last - first};
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  VirtualCluster cluster;
  std::cout << fmt::format("cluster of {} nodes up in {:.2f} s\n", cluster.nodes().size(),
                           cluster.bring_up_time().count());
  const fs::path work = cluster.scratch() / "ingest";
  fs::create_directories(work);
  // 64 trials of 0.5 s, sampled every 1 ms: 8 per worker.
  std::ofstream(work / "ingest.toml") << "[sweep]\nname = \"ingest\"\n[sampler]\ninterval_ms = 1\n"
                                         "[defaults]\ndataset = \"synthetic\"\nprogram = [\"/bin/sleep\", \"0.5\"]\n"
                                         "[grid]\nbatch_size = [" +
                                             [] {
                                               std::string sizes;
                                               for (int size = 1; size <= 64; ++size)
                                                 sizes += std::to_string(size) + (size < 64 ? ", " : "");
                                               return sizes;
                                             }() +
                                             "]\n";
  // The third separates the transport from the placement: one node, TCP.
  const std::vector<Layout> layouts{{"rank 0 on n1, 8 workers on n2 and n3 (TCP)", "n1:1,n2:4,n3:4", ""},
                                    {"9 ranks on n1 (shared memory)", "n1:9", ""},
                                    {"9 ranks on n1 (TCP: btl tcp,self)", "n1:9", "tcp,self"}};
  std::map<std::string, std::vector<double>> rates;
  for (int repeat = 0; repeat < repeats; ++repeat) {
    for (const Layout& layout : layouts) {
      const fs::path results = work / fmt::format("ingest-{}-{}.h5", repeat, &layout - layouts.data());
      // The allocation covers the three nodes; mpirun starts its daemons on
      // the hosts named by -H through srun, and runs on the batch node.
      const std::string command =
          fmt::format("mpirun --oversubscribe -H {} {} run ingest.toml -o {} -q --flush-interval 0.2", layout.hosts,
                      MEMSWEEP_EXECUTABLE, results.string());
      std::map<std::string, std::string> env{{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}};
      if (!layout.transports.empty()) env["OMPI_MCA_btl"] = layout.transports;
      const memsweep::testing::CommandResult submitted = cluster.run(
          {"sbatch", "--parsable", "--wait", "--nodes=3", "--ntasks=3", "--oversubscribe", "--wrap=" + command}, work,
          env);
      if (submitted.exit_status != 0 || !fs::exists(results)) {
        std::cerr << "the job failed: " << submitted.err << cluster.logs();
        return 1;
      }
      const Ingested figures = ingested(results);
      rates[layout.name].push_back(figures.rows_per_second);
      std::cout << fmt::format(
          "repeat {}: {:<45} {:>8.0f} rows/s, {:>5.0f} samples per trial, trials {:.2f} s each, sweep {:.1f} s\n",
          repeat + 1, layout.name, figures.rows_per_second, figures.samples_per_trial, figures.trial_seconds,
          figures.sweep_seconds);
    }
  }
  const double across = median(rates[layouts[0].name]);
  const double one = median(rates[layouts[1].name]);
  std::cout << fmt::format("median of {}: across nodes {:.0f} rows/s, one node {:.0f} rows/s, ratio {:.3f}\n", repeats,
                           across, one, one > 0 ? across / one : 0.0);
  return 0;
}
