// The MPI tests' main: it owns MPI for the whole run (one MPI_Init per
// process), and only rank 0 prints gtest's usual output; the other ranks
// print their failures, each line marked with the rank.

#include "memsweep/mpi_communicator.hpp"

#include <gtest/gtest.h>

#include <iostream>

namespace {

class FailuresOnly : public ::testing::EmptyTestEventListener {
 public:
  explicit FailuresOnly(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::cerr << "[rank " << rank_ << "] " << (result.file_name() ? result.file_name() : "?") << ':'
              << result.line_number() << ": " << result.summary() << std::endl;
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  const memsweep::MpiSession session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailuresOnly(rank));
  }
  return RUN_ALL_TESTS();
}
