#include "memsweep/trainer.hpp"

#include <omp.h>
#include <sched.h>

#include <charconv>
#include <cstdlib>
#include <string_view>

namespace memsweep {
namespace {

// A positive whole number at the start of `text` ("4" or OMP's list "4,2").
int leading_count(const char* text) {
  if (text == nullptr) return 0;
  const std::string_view view(text);
  int value = 0;
  const auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
  return error == std::errc{} && end != view.data() && value > 0 ? value : 0;
}

}  // namespace

int default_thread_count() {
  if (const int omp = leading_count(std::getenv("OMP_NUM_THREADS")); omp > 0) return omp;
  if (const int slurm = leading_count(std::getenv("SLURM_CPUS_PER_TASK")); slurm > 0) return slurm;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) > 0) return CPU_COUNT(&allowed);
  return 1;
}

void set_thread_count(int threads) { omp_set_num_threads(threads > 0 ? threads : 1); }

}  // namespace memsweep
