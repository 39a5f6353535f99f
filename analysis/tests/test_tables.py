"""paper_table: every figure checked against values worked out from what the test wrote."""

import math

import pandas as pd
import pytest

from memsweep_analysis import load
from memsweep_analysis.tables import paper_table, read_paper_csv
from results_builder import write_results_file

MIB = 2 ** 20
A = dict(dataset="mnist", learning_rate=0.1, epochs=2, batch_size=8, hidden=[10, 5])
B = dict(dataset="mnist", learning_rate=0.0005, epochs=3, batch_size=16, hidden=[7])
C = dict(dataset="fashion-mnist", learning_rate=0.01, epochs=1, batch_size=4, hidden=[3, 3, 3])


def figures(sys_mib, mean_mib, peak_mib, baseline_mib, predicted_mib):
    return dict(sys_used_mean=sys_mib * MIB, rss_mean=mean_mib * MIB, rss_peak=int(peak_mib * MIB),
                rss_baseline=int(baseline_mib * MIB), predicted_bytes=int(predicted_mib * MIB))


@pytest.fixture
def results(tmp_path):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [
        dict(A, repeat=0, **figures(1000, 60, 64, 50, 9)),
        dict(B, repeat=0, status="interrupted", **figures(5000, 500, 500, 1, 1)),  # not final: ignored
        dict(A, repeat=1, **figures(1010, 62, 70, 52, 9)),
        dict(C, repeat=0, **figures(2000, 30, 40, 36, 2)),
        dict(A, repeat=2, status="failed", **figures(9999, 999, 999, 0, 9)),  # counted in n, not averaged
        dict(B, repeat=0, attempt=1, **figures(1200.5, 70.25, 80.5, 60.25, 15.5)),
    ])
    return load(path)


def test_one_row_per_configuration_in_first_seen_order(results):
    table = paper_table(results)
    assert table[["dataset", "trial", "hidden"]].values.tolist() == [
        ["fashion-mnist", 1, "3-3-3"], ["mnist", 1, "10-5"], ["mnist", 2, "7"]]
    assert table["learning_rate"].tolist() == [0.01, 0.1, 0.0005]
    assert table["epochs"].tolist() == [1, 2, 3]
    assert table["batch_size"].tolist() == [4, 8, 16]
    assert table["n"].tolist() == [1, 3, 1]
    assert table["n_ok"].tolist() == [1, 2, 1]


def test_figures_are_means_and_sample_sds_of_the_ok_repeats_in_mib(results):
    row = paper_table(results, dataset="mnist").iloc[0]
    assert row["memory_used_mb"] == pytest.approx(1005.0, rel=1e-12)
    # SD (ddof 1) of two values d apart is d / sqrt(2)
    assert row["memory_used_mb_std"] == pytest.approx(10 / math.sqrt(2), rel=1e-12)
    assert row["rss_mean_mb"] == pytest.approx(61.0, rel=1e-12)
    assert row["rss_mean_mb_std"] == pytest.approx(2 / math.sqrt(2), rel=1e-12)
    assert row["rss_peak_mb"] == pytest.approx(67.0, rel=1e-12)
    assert row["rss_peak_mb_std"] == pytest.approx(6 / math.sqrt(2), rel=1e-12)
    # footprints 64 - 50 = 14 and 70 - 52 = 18
    assert row["rss_footprint_mb"] == pytest.approx(16.0, rel=1e-12)
    assert row["rss_footprint_mb_std"] == pytest.approx(4 / math.sqrt(2), rel=1e-12)
    assert row["predicted_mb"] == pytest.approx(9.0, rel=1e-12)
    assert row["predicted_mb_std"] == 0.0


def test_a_single_repeat_has_its_values_and_no_spread(results):
    row = paper_table(results, dataset="mnist").iloc[1]
    assert (row["memory_used_mb"], row["rss_mean_mb"], row["rss_peak_mb"], row["rss_footprint_mb"],
            row["predicted_mb"]) == (1200.5, 70.25, 80.5, 80.5 - 60.25, 15.5)
    assert math.isnan(row["memory_used_mb_std"]) and math.isnan(row["rss_footprint_mb_std"])


def test_a_configuration_without_an_ok_repeat_has_no_figures(tmp_path):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [dict(A, status="failed"), dict(A, repeat=1, status="timeout"),
                              dict(A, repeat=2, status="killed")])
    row = paper_table(load(path)).iloc[0]
    # the killed repeat has no result yet (not final: a resume may run it again), so it is not one of the n
    assert (row["n"], row["n_ok"]) == (2, 0)
    assert math.isnan(row["memory_used_mb"]) and math.isnan(row["rss_footprint_mb"])


def test_paper_values_beside_in_the_papers_order(results, tmp_path):
    csv = tmp_path / "mnist_table1.csv"
    csv.write_text("trial,learning_rate,epochs,batch_size,hidden,memory_used_mb\n"
                   "1,0.0005,3,16,7,2516.309735\n"
                   "2,0.3,9,9,1-2,3000.5\n")
    table = paper_table(results, paper_csv=str(csv))
    mnist = table[table["dataset"] == "mnist"]
    assert mnist["paper_trial"].tolist()[:2] == [1, 2]
    assert math.isnan(mnist["paper_trial"].tolist()[2])
    assert mnist["paper_memory_used_mb"].tolist()[:2] == [2516.309735, 3000.5]
    assert mnist["hidden"].tolist() == ["7", "1-2", "10-5"]
    assert mnist["memory_used_mb"].tolist()[0] == 1200.5
    assert mnist["n"].tolist()[1] == 0  # the paper's row no result matches is kept, with nothing measured
    assert math.isnan(mnist["memory_used_mb"].tolist()[1])
    columns = list(table.columns)
    assert columns.index("paper_trial") == columns.index("trial") + 1
    assert columns.index("paper_memory_used_mb") + 1 == columns.index("memory_used_mb")
    # the CSV's name says it is MNIST's: Fashion-MNIST's row gets nothing from it
    assert table.loc[table["dataset"] == "fashion-mnist", "paper_trial"].isna().all()


def test_paper_csv_dataset_from_its_name_or_given(tmp_path):
    for name, dataset in [("fashion_mnist_tables2_3.csv", "fashion-mnist"), ("cifar10_tables4_5.csv", "cifar-10"),
                          ("mnist_table1.csv", "mnist")]:
        path = tmp_path / name
        path.write_text("trial,learning_rate,epochs,batch_size,hidden,memory_used_mb\n1,0.1,1,1,5,1.0\n")
        assert read_paper_csv(path)["dataset"].tolist() == [dataset]
    assert read_paper_csv(tmp_path / "mnist_table1.csv", dataset="cifar-10")["dataset"].tolist() == ["cifar-10"]
    bad = tmp_path / "other.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="other.csv: not a paper table"):
        read_paper_csv(bad)


def test_accepts_a_trials_frame(results):
    assert paper_table(results.trials).equals(paper_table(results))


def test_trainer_and_params_columns_come_after_the_papers(tmp_path):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [
        dict(A, **figures(1000, 60, 64, 50, 9)),
        dict(A, trainer="pytorch", params={"dropout": 0.5, "trial": "t1"}, **figures(1100, 200, 300, 0, -1)),
        dict(A, trainer="pytorch", params={"dropout": 0.5, "trial": "t1"}, repeat=1, **figures(1100, 200, 310, 0, -1)),
        dict(A, trainer="pytorch", params={"dropout": 0.25}, **figures(1100, 200, 280, 0, -1)),
    ])
    table = paper_table(load(path))
    # the columns a table always had, as they were, then the trainer and the parameters (`trial` is the paper's)
    assert list(table.columns) == [
        "dataset", "trial", "learning_rate", "epochs", "batch_size", "hidden", "n", "n_ok", "memory_used_mb",
        "memory_used_mb_std", "rss_mean_mb", "rss_mean_mb_std", "rss_peak_mb", "rss_peak_mb_std", "rss_footprint_mb",
        "rss_footprint_mb_std", "predicted_mb", "predicted_mb_std", "config", "trial_numbers", "trial_ids", "model",
        "optimizer", "channels", "shape", "memory_plan", "trainer", "dropout", "param_trial"]
    # the configurations' trials by their numbers (load order here: the builder writes no plan_index)
    assert table["trial_numbers"].tolist() == [(1,), (2, 3), (4,)]
    assert isinstance(table["model"].dtype, pd.CategoricalDtype) and table["model"].tolist() == ["mlp"] * 3
    # the same hyperparameters trained by two trainers, or with other parameters, are rows of their own
    assert table["trainer"].tolist() == ["memsweep", "pytorch", "pytorch"]
    assert table["n"].tolist() == [1, 2, 1]
    assert table["rss_peak_mb"].tolist() == [64, 305, 280]
    assert table["rss_footprint_mb"].tolist() == [14, 305, 280]  # a program's footprint: its whole peak
    assert math.isnan(table["dropout"].iloc[0]) and table["dropout"].tolist()[1:] == [0.5, 0.25]
    assert table["param_trial"].tolist()[1] == "t1"
    assert table.attrs["param_columns"] == {"dropout": "dropout", "trial": "param_trial"}
