// The example sweeps in jobs/examples/ parse, and the paper's three studies
// hold exactly the published trials (checked against ../shared/paper/*.csv).

#include "memsweep/config.hpp"
#include "support/paper_tables.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace memsweep {
namespace {

namespace fs = std::filesystem;

const fs::path kExamples = fs::path(MEMSWEEP_SOURCE_DIR) / "jobs" / "examples";

struct PaperStudy {
  const char* sweep_file;
  const char* csv_file;
  DatasetKind dataset;
  std::size_t trials;
};

class PaperStudies : public ::testing::TestWithParam<PaperStudy> {};

TEST_P(PaperStudies, HoldExactlyThePublishedTrials) {
  const PaperStudy& study = GetParam();
  const fs::path csv = testing::paper_table(study.csv_file);
  MEMSWEEP_REQUIRE_SHARED_FILE(csv);
  const std::vector<testing::PublishedTrial> published = testing::read_paper_table(csv);
  const SweepSpec sweep = load_sweep_file(kExamples / study.sweep_file);
  ASSERT_EQ(published.size(), study.trials);
  ASSERT_EQ(sweep.trials.size(), study.trials);
  for (std::size_t i = 0; i < published.size(); ++i) {
    const TrialSpec& t = sweep.trials[i];
    SCOPED_TRACE("published trial " + std::to_string(i + 1));
    EXPECT_EQ(t.dataset.kind, study.dataset);
    EXPECT_EQ(t.model, ModelKind::mlp);
    EXPECT_DOUBLE_EQ(t.learning_rate, published[i].learning_rate);
    EXPECT_EQ(t.epochs, published[i].epochs);
    EXPECT_EQ(t.batch_size, published[i].batch_size);
    EXPECT_EQ(t.hidden, published[i].hidden);
  }
}

INSTANTIATE_TEST_SUITE_P(Paper, PaperStudies,
                         ::testing::Values(PaperStudy{"paper-mnist.toml", "mnist_table1.csv", DatasetKind::mnist, 11},
                                           PaperStudy{"paper-fashion-mnist.toml", "fashion_mnist_tables2_3.csv",
                                                      DatasetKind::fashion_mnist, 5},
                                           PaperStudy{"paper-cifar-10.toml", "cifar10_tables4_5.csv",
                                                      DatasetKind::cifar10, 5}),
                         [](const auto& param_info) {
                           std::string name(dataset_name(param_info.param.dataset));
                           std::erase(name, '-');
                           return name;
                         });

TEST(ExampleSweeps, EveryExampleParses) {
  int parsed = 0;
  for (const auto& entry : fs::directory_iterator(kExamples)) {
    if (entry.path().extension() != ".toml") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW({
      const SweepSpec sweep = load_sweep_file(entry.path());
      EXPECT_FALSE(sweep.trials.empty());
    });
    ++parsed;
  }
  EXPECT_GE(parsed, 4);
}

TEST(ExampleSweeps, QuickstartIsSmallAndSynthetic) {
  const SweepSpec sweep = load_sweep_file(kExamples / "quickstart.toml");
  EXPECT_GE(sweep.trials.size(), 2u);
  EXPECT_LE(sweep.trials.size(), 8u);
  for (const TrialSpec& t : sweep.trials) {
    EXPECT_EQ(t.dataset.kind, DatasetKind::synthetic);
    EXPECT_EQ(t.model, ModelKind::mlp);
    // Work per trial, in examples seen, bounds the run time on two cores.
    EXPECT_LE(static_cast<long>(t.epochs) * t.dataset.synthetic.train_size, 20'000L);
  }
}

}  // namespace
}  // namespace memsweep
