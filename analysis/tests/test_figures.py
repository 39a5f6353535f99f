"""figures: the numbers each figure draws, checked by hand; what each draws (colours, axis scales, shading,
notes), read from its artists and its PNG's pixels; and every PNG's size."""

import math

import pandas as pd
import pytest

from memsweep_analysis import figures, load
from pngs import png_colours_present, png_size
from results_builder import write_results_file

MIB = 2 ** 20


def trial(config, footprint_mib, status="ok", sys_mib=800.0, batch=32, dataset="mnist"):
    return dict(dataset=dataset, config=config, status=status, batch_size=batch, learning_rate=0.01,
                rss_footprint=footprint_mib * MIB, sys_used_mean=sys_mib * MIB, predicted_bytes=10 * MIB,
                host="h", trial_id=f"{config}-{footprint_mib}", attempt=0, final=True)


def test_points_average_the_ok_repeats_of_each_configuration():
    trials = pd.DataFrame([
        trial("a", 10, sys_mib=800, batch=8), trial("a", 14, sys_mib=810, batch=8),
        trial("a", 500, status="diverged", batch=8),          # a result, but not a footprint
        trial("a", math.nan, batch=8),                         # -1 in the file: not measured
        trial("b", 30, sys_mib=900, batch=64),
    ])
    points = figures.memory_points(trials, "batch_size")
    assert list(points["batch_size"]) == [8, 64]
    first, second = points.iloc[0], points.iloc[1]
    assert first["n"] == 2
    assert first["footprint_mean"] == 12 * MIB
    assert first["footprint_std"] == pytest.approx(math.sqrt(8) * MIB)   # (10, 14): deviations 2, 2; / (2 - 1)
    assert first["sys_used_mean"] == 805 * MIB
    assert second["n"] == 1 and math.isnan(second["footprint_std"])       # one repeat: no spread to show


def test_epoch_boundaries_are_the_first_samples_of_each_new_epoch_in_time_order():
    samples = pd.DataFrame({"t": [0.3, 0.0, 0.1, 0.4, 0.2], "epoch": [1, 0, 0, 2, 1]})
    assert figures.epoch_boundaries(samples) == [(0.2, 1), (0.4, 2)]
    assert figures.epoch_boundaries(samples[samples["epoch"] == 1]) == []


def test_every_figure_is_800_by_500_and_nothing_is_written_when_there_is_nothing_to_draw(tmp_path):
    trials = pd.DataFrame([trial("a", 10, batch=8), trial("a", 12, batch=8), trial("b", 20, batch=16),
                           trial("c", 5, batch=8, dataset="cifar-10")])
    fits = [dict(dataset="mnist", host="h", a_bytes=MIB, b=1.5, n=3, r2=1.0)]
    counters = pd.DataFrame({"dataset": ["mnist"] * 3, "batch_size": [8, 8, 16],
                             "perf::PAGE-FAULTS per step": [10.0, 12.0, 5.0]})
    written = [
        figures.memory_vs_hyperparameter(trials, "batch_size", tmp_path / "m.png"),
        figures.memory_vs_hyperparameter(trials, "learning_rate", tmp_path / "sub" / "lr.png"),
        figures.estimate_vs_measured(trials, fits, tmp_path / "e.png"),
        figures.estimate_vs_measured(trials, [], tmp_path / "e0.png"),
        figures.counters_vs_batch(counters, tmp_path / "c.png"),
    ]
    for drawn in written:
        assert png_size(drawn) == (800, 500), drawn.path
    # Nothing to draw: a reason, and no file at all (not an empty image).
    empty = tmp_path / "empty"
    nothing = trials.assign(status="failed")
    reasons = [
        figures.memory_vs_hyperparameter(nothing, "batch_size", empty / "none.png"),
        figures.estimate_vs_measured(nothing, fits, empty / "e-none.png"),
        figures.counters_vs_batch(counters[["dataset", "batch_size"]], empty / "c-none.png"),
        figures.peak_vs_batch_by_trainer(pd.DataFrame(columns=["trainer", "dataset", "batch_size", "peak"]),
                                         empty / "t-none.png"),
    ]
    assert [type(r) for r in reasons] == [str] * 4
    assert "counters" in reasons[2]
    assert not empty.exists() or list(empty.iterdir()) == []


def test_eta_squared_is_the_share_of_variance_between_level_means():
    assert figures.eta_squared([1, 1, 3, 3], ["a", "a", "b", "b"]) == pytest.approx(1.0)
    assert figures.eta_squared([1, 3, 1, 3], ["a", "a", "b", "b"]) == pytest.approx(0.0)
    # mean 3, SS total 4 + 1 + 0 + 9 = 14; level means 1.5 and 4.5, SS between 4 × 2.25 = 9
    assert figures.eta_squared([1, 2, 3, 6], ["a", "a", "b", "b"]) == pytest.approx(9 / 14)
    assert figures.eta_squared([5, 5, 5], ["a", "b", "b"]) == 0.0          # nothing varies: nothing explained
    assert figures.eta_squared([1, math.nan, 3], ["a", "a", "b"]) == pytest.approx(1.0)


def test_strongest_factors_ranks_fields_with_two_levels_and_skips_constant_ones():
    frame = pd.DataFrame({"dataset": ["mnist"] * 4, "model": ["cnn", "cnn", "mlp", "mlp"],
                          "optimizer": ["sgd", "adam", "sgd", "adam"], "channels": ["8", "8", "", ""],
                          "footprint": [100.0, 104.0, 10.0, 12.0]})
    ranked = figures.strongest_factors(frame, "footprint")
    names = [name for name, _ in ranked]
    # channels splits exactly like model (an MLP has none): as strong, and after it in FACTORS' order
    assert names == ["model", "channels", "optimizer"]
    assert ranked[0][1] > 0.99 and ranked[2][1] < 0.01
    assert figures.strongest_factors(frame.assign(model="cnn", optimizer="sgd", channels="8"), "footprint") == []


@pytest.mark.parametrize("values, expected", [
    ([32, 64, 128], True),         # three doublings
    ([32, 256], True),             # two values, a factor 8 apart
    ([16, 32], False),             # two values a factor 2 apart: linear reads as well
    ([48, 64, 96], False),         # not all powers of two, ratio 2
    ([1, 2, 3], False),
    ([10, 50], True),              # ratio 5
    ([0, 8, 16], False),           # no log of 0
    ([8, 8], False),
])
def test_a_log2_axis_for_doublings_and_wide_ranges(values, expected):
    assert figures.log2_axis(values) is expected


def grid():
    """model {cnn, mlp} × optimizer {sgd, adam} × batch {32, 64, 128, 256}, two repeats: the footprint grows
    with batch for CNNs (1 MiB per example) and barely for MLPs; the optimizer adds 1 MiB."""
    rows = []
    for model in ("cnn", "mlp"):
        for optimizer in ("sgd", "adam"):
            for batch in (32, 64, 128, 256):
                for repeat in range(2):
                    footprint = 20 + (batch if model == "cnn" else batch / 64) + (optimizer == "adam") + repeat
                    rows.append(dict(trial(f"{model}-{optimizer}-{batch}", footprint, batch=batch,
                                           sys_mib=900 + footprint), model=model, optimizer=optimizer,
                                     learning_rate=0.01 if repeat == 0 or batch < 128 else 0.1))
    return pd.DataFrame(rows)


def test_memory_figure_colours_by_the_strongest_factor_and_splits_by_the_next(tmp_path):
    drawn = figures.memory_vs_hyperparameter(grid(), "batch_size", tmp_path / "m.png")
    assert drawn.factor == "model" and drawn.levels == ["cnn", "mlp"] and drawn.facet == "optimizer"
    assert len(drawn.colours) == 2
    # two panels (optimizer) × two rows (footprint, system used), all on a log2 batch axis
    assert drawn.xscales == [("log", 2.0)] * 4
    assert "± SD over repeats" in drawn.title
    # the PNG's pixels: exactly two of the palette's colours are drawn
    palette = set(figures._colours()[:10])
    assert png_colours_present(drawn, palette) == {"tab:blue", "tab:orange"}
    assert drawn.notes == []   # system used follows the footprints: not a shared node


def test_no_sd_in_the_title_without_repeats_and_linear_where_values_do_not_double(tmp_path):
    once = grid().drop_duplicates("config")
    drawn = figures.memory_vs_hyperparameter(once, "batch_size", tmp_path / "m.png")
    assert "SD" not in drawn.title
    epochs = figures.memory_vs_hyperparameter(once.assign(epochs=[1, 2] * 8), "epochs", tmp_path / "e.png")
    assert {scale for scale, _ in epochs.xscales} == {"linear"}
    narrow = figures.memory_vs_hyperparameter(once[once["batch_size"] <= 64], "batch_size", tmp_path / "n.png")
    assert {scale for scale, _ in narrow.xscales} == {"linear"}


def test_estimate_figure_colours_by_model(tmp_path):
    trials = grid()
    trials["predicted_bytes"] = trials["rss_footprint"] * 0.9
    drawn = figures.estimate_vs_measured(trials, [dict(dataset="mnist", host="h", a_bytes=0, b=1.1)],
                                         tmp_path / "e.png")
    assert drawn.factor == "model" and len(drawn.colours) == 2 and drawn.facet == "optimizer"


def test_shared_node_warning_when_system_memory_varies_more_than_the_footprints(tmp_path):
    busy = pd.DataFrame([trial(f"c{i}", 10 + i, batch=2 ** (3 + i), sys_mib=800 + 300 * (i % 2))
                         for i in range(4)])
    drawn = figures.memory_vs_hyperparameter(busy, "batch_size", tmp_path / "m.png")
    assert len(drawn.notes) == 1 and drawn.notes[0].startswith("Shared node?")
    assert any("shared node?" in text for text in drawn.texts)   # over the system-used panel
    quiet = busy.assign(sys_used_mean=busy["rss_footprint"] + 800 * MIB)
    assert figures.memory_vs_hyperparameter(quiet, "batch_size", tmp_path / "q.png").notes == []
    assert figures.shared_node_note(quiet) is None


def test_rss_over_time_plots_the_final_attempt_and_refuses_an_unknown_trial(tmp_path):
    path = str(tmp_path / "r.h5")
    rows = write_results_file(path, [dict(attempt=0, status="interrupted"), dict(attempt=1, status="ok")],
                              samples=[dict(attempt=1, epoch=e, t=0.01 * i, rss=(60 + i) * MIB)
                                       for i, e in enumerate([0, 1, 1, 2])])
    results = load(path)
    trial_id = rows[0]["trial_id"]
    assert figures._final_attempt(results.trials, trial_id)["attempt"] == 1
    assert png_size(figures.rss_over_time(results, trial_id, tmp_path / "rss.png")) == (800, 500)
    with pytest.raises(KeyError, match="ffffffffffff"):
        figures.rss_over_time(results, "ffffffffffff", tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_peak_against_batch_per_trainer_colours_trainers_on_a_log2_batch_axis(tmp_path):
    peaks = pd.DataFrame({"trainer": ["memsweep", "pytorch"] * 4, "dataset": ["mnist"] * 6 + ["cifar-10"] * 2,
                          "batch_size": [8, 8, 16, 16, 32, 32, 8, 8], "key": list("abcdefgh"),
                          "peak": [100 * MIB, 300 * MIB, 110 * MIB, 320 * MIB, 120 * MIB, 340 * MIB, 90 * MIB,
                                   200 * MIB]})
    drawn = figures.peak_vs_batch_by_trainer(peaks, tmp_path / "t.png", "memsweep")
    assert png_size(drawn) == (800, 500)
    assert drawn.levels == ["memsweep", "pytorch"] and len(drawn.colours) == 2
    # batch 8 to 32: three doublings, on log2 in both panels
    assert drawn.xscales == [("log", 2.0), ("log", 2.0)]


class Results:
    """What rss_over_time reads of a load(): trials and samples_for, here with samples that carry `phase`
    (the results builder writes the schema as it is; the phase column is added by the sampler)."""

    def __init__(self, trials, samples):
        self.trials, self.samples = trials, samples

    def samples_for(self, trial_ids, attempt=None):
        rows = self.samples[self.samples["trial_id"].isin(trial_ids)]
        return rows if attempt is None else rows[rows["attempt"] == attempt]


def one_trial_samples(phases, rss_mib, sys_mib=None):
    trials = pd.DataFrame([dict(trial("a", 10), trial_id="t1")])
    samples = pd.DataFrame({"trial_id": "t1", "attempt": 0, "t": [0.1 * i for i in range(len(rss_mib))],
                            "epoch": [0, 1, 1, 1, 1, 2][:len(rss_mib)], "rss": [v * MIB for v in rss_mib],
                            "sys_used": [v * MIB for v in (sys_mib or [800 + v for v in rss_mib])]})
    if phases is not None:
        samples["phase"] = phases
    return Results(trials, samples)


def test_rss_over_time_shades_evaluation_and_names_the_phase_of_the_peak(tmp_path):
    # setup, training, evaluation (the highest point), training, evaluation; a span lasts until the next
    # sample saw another phase, or to its own last sample
    results = one_trial_samples([0, 1, 2, 1, 2, 2], [50, 60, 75, 62, 70, 71])
    assert figures.phase_spans(results.samples) == [(pytest.approx(0.2), pytest.approx(0.3)),
                                                    (pytest.approx(0.4), pytest.approx(0.5))]
    drawn = figures.rss_over_time(results, "t1", tmp_path / "r.png")
    assert png_size(drawn) == (800, 500)
    assert drawn.shaded
    assert any(text.startswith("peak 75.0 MiB (evaluation)") for text in drawn.texts)
    assert drawn.notes == []    # the node's memory followed the trial's own


def test_rss_over_time_without_phases_shades_nothing_and_says_the_phase_is_unknown(tmp_path):
    for phases in (None, [-1] * 6, [0, 1, 1, 1, 1, 1]):
        drawn = figures.rss_over_time(one_trial_samples(phases, [50, 60, 75, 62, 70, 71]), "t1",
                                      tmp_path / "r.png")
        assert not drawn.shaded
    assert any("(phase unknown)" in text for text in drawn.texts) is False   # the last one knows: training
    assert any("peak 75.0 MiB (training)" in text for text in drawn.texts)
    unknown = figures.rss_over_time(one_trial_samples(None, [50, 60, 75, 62, 70, 71]), "t1", tmp_path / "u.png")
    assert any("(phase unknown)" in text for text in unknown.texts)


def test_rss_over_time_warns_when_the_node_moved_more_than_the_trial(tmp_path):
    results = one_trial_samples(None, [50, 52, 54, 53, 52, 51], sys_mib=[800, 1200, 900, 1300, 850, 800])
    drawn = figures.rss_over_time(results, "t1", tmp_path / "r.png")
    assert len(drawn.notes) == 1 and "500 MiB" in drawn.notes[0]
    assert any("shared node?" in text for text in drawn.texts)


def test_rss_over_time_without_samples_writes_nothing(tmp_path):
    results = one_trial_samples(None, [50, 60])
    results.samples = results.samples.iloc[0:0]
    reason = figures.rss_over_time(results, "t1", tmp_path / "r.png")
    assert isinstance(reason, str) and "no samples" in reason
    assert list(tmp_path.iterdir()) == []


def test_a_loaded_grid_of_models_is_coloured_by_model_on_a_log2_batch_axis(tmp_path):
    """The issue's grid through load(): categorical columns as load() types them, channels only for CNNs."""
    path = str(tmp_path / "grid.h5")
    rows = []
    for model in ("mlp", "cnn"):
        for optimizer in ("sgd", "adam"):
            for batch in (32, 256):
                for width in (64, 512):
                    per_example = 0.3 if model == "cnn" else 0.01
                    peak = 100 + per_example * batch + width / 64 + (optimizer == "adam")
                    rows.append(dict(dataset="mnist", model=model, optimizer=optimizer, batch_size=batch,
                                     hidden=[width], channels=[8] if model == "cnn" else [],
                                     rss_baseline=50 * MIB, rss_peak=int(peak * MIB),
                                     sys_used_mean=(900 + peak) * MIB))
    write_results_file(path, rows)
    trials = load(path).trials
    drawn = figures.memory_vs_hyperparameter(trials, "batch_size", tmp_path / "batch.png")
    # model and channels split the grid the same way (an MLP has no channels): model comes first in FACTORS,
    # and channels, fixed by the model, is passed over for the panels
    assert drawn.factor == "model" and drawn.levels == ["cnn", "mlp"]
    assert drawn.facet == "optimizer"
    assert len(drawn.colours) == 2 and drawn.xscales == [("log", 2.0)] * 4
    assert "SD" not in drawn.title     # one repeat each
    assert png_colours_present(drawn, set(figures._colours()[:10])) == {"tab:blue", "tab:orange"}
    width = figures.memory_vs_hyperparameter(trials, "max_width", tmp_path / "width.png")
    assert {scale for scale in width.xscales} == {("log", 2.0)}   # 64 and 512: a ratio of 8
