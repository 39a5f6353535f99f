"""Tests of jobs/examples/torch_train.py, the PyTorch reference trainer of program trials, and of the
package beside it, memsweep_torch.

Most tests run the script as a subprocess with this interpreter (Debian's /usr/bin/python3, which has
torch), one thread each. Without torch they skip loudly, or fail when CI=true. The real datasets come
from $MEMSWEEP_TEST_DATA (else $MEMSWEEP_TEST_DATASETS, as the C++ tests use, else ../shared/datasets
next to the repository); a missing one skips loudly, or fails when CI=true.

Run: PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m pytest -q -p no:cacheprovider jobs/examples/tests
"""

import gzip
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

sys.dont_write_bytecode = True  # no __pycache__ next to the script

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.dirname(HERE)
SCRIPT = os.path.join(EXAMPLES, "torch_train.py")
REPO = os.path.dirname(os.path.dirname(EXAMPLES))
IN_CI = os.environ.get("CI") == "true"

sys.path.insert(0, EXAMPLES)
# The package beside the script; numpy only at import, torch is imported when training.
import memsweep_torch.datasets  # noqa: E402
from memsweep_torch.batches import epoch_order  # noqa: E402
from memsweep_torch.cli import parse_args  # noqa: E402
from memsweep_torch.datasets import (  # noqa: E402
    CIFAR_RECORD, generate_synthetic, input_shape, load_cifar, load_dataset)
from memsweep_torch.errors import InputError  # noqa: E402
from memsweep_torch.models import (  # noqa: E402
    build_model, checkpoint_segments, checkpointed_model, conv_blocks, memsweep_layers)
from memsweep_torch.rng import Rng, mix_seed, stable_hash  # noqa: E402

try:
    import torch

    torch.set_num_threads(1)
    TORCH_PROBLEM = None
except Exception as error:  # ImportError, or a broken installation
    TORCH_PROBLEM = f"{type(error).__name__}: {error}"


def loud_skip_or_fail(message):
    if IN_CI:
        pytest.fail(f"{message} (CI=true: this fails the test instead of skipping it)", pytrace=False)
    print(f"\n*** SKIPPED: {message} ***\n", file=sys.stderr)
    pytest.skip(message)


@pytest.fixture
def needs_torch():
    if TORCH_PROBLEM is not None:
        loud_skip_or_fail(f"PyTorch cannot be imported by {sys.executable}: {TORCH_PROBLEM}")


def datasets_root():
    for variable in ("MEMSWEEP_TEST_DATA", "MEMSWEEP_TEST_DATASETS"):
        value = os.environ.get(variable)
        if value:
            return value
    return os.path.join(os.path.dirname(REPO), "shared", "datasets")


def real_dataset(name):
    folder = os.path.join(datasets_root(), name)
    if not os.path.isdir(folder):
        loud_skip_or_fail(f"real {name} not found at {folder}: set MEMSWEEP_TEST_DATA to a folder holding {name}/")
    return folder


# ---- running the script --------------------------------------------------------


def run(args, events_path=None, timeout=300, **popen):
    env = dict(os.environ)
    env.pop("MEMSWEEP_EVENTS_FD", None)
    env.update(PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1")
    if events_path is not None:
        env["MEMSWEEP_EVENTS_FD"] = str(events_path)
    env.update(popen.pop("env", {}))
    return subprocess.run(
        [sys.executable, SCRIPT, "--threads", "1", *args],
        env=env, capture_output=True, text=True, timeout=timeout, **popen,
    )


def events_of(path):
    with open(path, encoding="utf-8") as f:
        return parse_events(f.read())


def parse_events(text):
    assert text.endswith("\n"), f"the last event line is not terminated: {text!r}"
    lines = text.split("\n")[:-1]
    return [json.loads(line) for line in lines]  # every line valid JSON


def check_protocol(events, epochs):
    """The header, then per epoch: train phase, eval phase, loss and accuracy; nothing else."""
    assert set(events[0]) == {"parameters", "activations_per_example"}, events[0]
    assert len(events) == 1 + 3 * epochs, events
    for epoch in range(1, epochs + 1):
        start, evaluate, end = events[1 + 3 * (epoch - 1) : 1 + 3 * epoch]
        assert start == {"epoch": epoch, "phase": "train"}
        assert evaluate == {"phase": "eval"}
        assert set(end) == {"epoch", "loss", "accuracy"} and end["epoch"] == epoch, end
        assert math.isfinite(end["loss"]) and end["loss"] >= 0.0, end
        assert 0.0 <= end["accuracy"] <= 1.0, end
    return [e for e in events if "loss" in e]


def synthetic(shape, train, test, *extra):
    return ["--dataset", "synthetic", "--synthetic-shape", shape, "--synthetic-train-size", str(train),
            "--synthetic-test-size", str(test), *extra]


def succeeded(result):
    assert result.returncode == 0, f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result


# ---- independent counts of the architectures -----------------------------------


def conv_params(c_in, c_out):
    return c_out * c_in * 3 * 3 + c_out


def fc_params(n_in, n_out):
    return n_in * n_out + n_out


# ---- memsweep's randomness, no torch needed -------------------------------------


def test_mt19937_64_gives_the_standards_10000th_value():
    assert int(Rng(5489).next(10000)[-1]) == 9981545732273789042


def test_mt19937_64_blocks_and_single_draws_agree():
    rng = Rng(7)
    singles = [int(rng.next(1)[0]) for _ in range(400)] + rng.next(700).tolist()
    assert Rng(7).next(1100).tolist() == singles


def test_fnv1a_and_mix_seed():
    assert stable_hash("") == 0xCBF29CE484222325
    assert stable_hash("a") == 0xAF63DC4C8601EC8C
    assert stable_hash("foobar") == 0x85944171F73967E8
    assert len({mix_seed(7, s) for s in range(1000)}) == 1000


def test_epoch_order_is_a_seeded_permutation():
    order = epoch_order(103, 42, 0)
    assert sorted(order) == list(range(103))
    assert order == epoch_order(103, 42, 0)
    assert order != epoch_order(103, 42, 1)


@pytest.mark.parametrize("noise", [0.0, 0.7])
def test_synthetic_vectorised_generator_equals_the_value_by_value_loop(monkeypatch, noise):
    # Odd pixel count (the Box-Muller spare crosses examples) and chunks that cut through examples.
    monkeypatch.setattr(memsweep_torch.datasets, "SYNTHETIC_CHUNK_VALUES", 40)
    spec = dict(pixels=15, classes=4, train_size=23, test_size=9, noise=noise, seed=5)
    fast = generate_synthetic(spec)
    slow = generate_synthetic(spec, force_slow=True)
    for (fast_x, fast_y), (slow_x, slow_y) in zip(fast, slow):
        assert np.array_equal(fast_x, slow_x) and np.array_equal(fast_y, slow_y)
        assert fast_x.dtype == np.float32 and fast_x.min() >= 0.0 and fast_x.max() <= 1.0


# ---- CIFAR-10 binary reading ------------------------------------------------------


def test_cifar10_subset_is_read_as_memsweep_reads_it():
    folder = real_dataset("cifar-10")
    (train_x, train_y), (test_x, test_y) = load_cifar(folder)
    # The shared subset (its README): 4,000 + 1,000 records, known first labels and pixels.
    assert train_x.shape == (4000, 3, 32, 32) and train_x.dtype == np.float32
    assert test_x.shape == (1000, 3, 32, 32)
    assert train_y[:10].tolist() == [6, 9, 9, 4, 1, 1, 2, 7, 8, 3]
    assert test_y[:10].tolist() == [3, 8, 8, 0, 6, 6, 1, 6, 3, 1]
    red = np.array([59, 43, 50, 68, 98, 119, 139, 145, 149, 149], dtype=np.float32) / np.float32(255)
    assert np.array_equal(train_x[0, 0, 0, :10], red)
    assert np.bincount(train_y, minlength=10).tolist() == [396, 366, 420, 384, 422, 393, 414, 385, 407, 413]


def cifar_records(labels):
    rng = np.random.default_rng(0)
    records = rng.integers(0, 256, size=(len(labels), CIFAR_RECORD), dtype=np.uint8)
    records[:, 0] = labels
    return records.tobytes()


def test_cifar10_batches_raw_or_gzipped_consecutively(tmp_path):
    (tmp_path / "data_batch_1.bin").write_bytes(cifar_records([1, 2]))
    (tmp_path / "data_batch_2.bin.gz").write_bytes(gzip.compress(cifar_records([3])))
    (tmp_path / "test_batch.bin").write_bytes(cifar_records([4, 5, 6]))
    (train_x, train_y), (test_x, test_y) = load_cifar(str(tmp_path))
    assert train_y.tolist() == [1, 2, 3] and test_y.tolist() == [4, 5, 6]
    assert train_x.shape == (3, 3, 32, 32)
    (tmp_path / "data_batch_4.bin").write_bytes(cifar_records([7]))  # a gap: batch 3 is missing
    with pytest.raises(InputError, match="data_batch_3.bin"):
        load_cifar(str(tmp_path))


def test_cifar10_trains_on_a_few_hundred_examples(needs_torch, tmp_path):
    folder = real_dataset("cifar-10")
    events_path = tmp_path / "events.jsonl"
    result = succeeded(run(["--dataset", "cifar-10", "--data-dir", folder, "--model", "cnn", "--channels", "8,16",
                            "--hidden", "32", "--optimizer", "adam", "--learning-rate", "0.001", "--epochs", "1",
                            "--max-train-examples", "300", "--max-test-examples", "200", "--seed", "1"],
                           events_path))
    assert "300 train / 200 test examples" in result.stdout
    events = events_of(events_path)
    check_protocol(events, 1)
    assert events[0]["parameters"] == (conv_params(3, 8) + conv_params(8, 16) + fc_params(16 * 8 * 8, 32)
                                       + fc_params(32, 10))


# ---- real MNIST: the learning test of tests/trainer/test_learning.cpp -------------------


def test_mnist_mlp_784_128_10_reaches_95_percent_within_3_epochs(needs_torch, tmp_path):
    folder = real_dataset("mnist")
    args = ["--dataset", "mnist", "--data-dir", folder, "--model", "mlp", "--hidden", "128", "--optimizer", "sgd",
            "--learning-rate", "0.1", "--batch-size", "32", "--seed", "1"]
    # One epoch reaches it (0.9507, as memsweep's own trainer with the same seed); only if it did not
    # would the three epochs the C++ test allows be run.
    for epochs in (1, 3):
        events_path = tmp_path / f"events-{epochs}.jsonl"
        succeeded(run(args + ["--epochs", str(epochs)], events_path, timeout=900))
        events = events_of(events_path)
        ends = check_protocol(events, epochs)
        best = max(end["accuracy"] for end in ends)
        if best >= 0.95:
            break
    assert best >= 0.95, ends
    assert events[0] == {"parameters": 784 * 128 + 128 + 128 * 10 + 10, "activations_per_example": 128 + 10}


# ---- the events protocol ------------------------------------------------------------


def test_events_file_lines_for_every_epoch(needs_torch, tmp_path):
    events_path = tmp_path / "events.jsonl"
    events_path.write_text("")  # appended to, not truncated
    result = succeeded(run(synthetic("1,8,8", 200, 50, "--hidden", "16,12", "--epochs", "3",
                                     "--learning-rate", "0.1"), events_path))
    events = events_of(events_path)
    ends = check_protocol(events, 3)
    assert events[0] == {"parameters": fc_params(64, 16) + fc_params(16, 12) + fc_params(12, 10),
                         "activations_per_example": 16 + 12 + 10}
    assert ends[-1]["loss"] < ends[0]["loss"]
    assert len([line for line in result.stdout.splitlines() if line.startswith("epoch ")]) == 3


def test_events_on_an_inherited_file_descriptor(needs_torch):
    read_end, write_end = os.pipe()
    try:
        result = run(synthetic("1,8,8", 100, 20, "--hidden", "8", "--epochs", "2"),
                     env={"MEMSWEEP_EVENTS_FD": str(write_end)}, pass_fds=(write_end,))
        os.close(write_end)
        write_end = None
        with os.fdopen(read_end, encoding="utf-8") as pipe:
            read_end = None
            text = pipe.read()
    finally:
        for fd in (read_end, write_end):
            if fd is not None:
                os.close(fd)
    succeeded(result)
    check_protocol(parse_events(text), 2)


def test_no_events_without_the_variable(needs_torch, tmp_path):
    result = succeeded(run(synthetic("1,8,8", 50, 10, "--hidden", "8"), cwd=tmp_path))
    assert "epoch 1/1" in result.stdout
    assert list(tmp_path.iterdir()) == []


# ---- the convolutional models on synthetic data ---------------------------------------


def test_synthetic_cnn_one_epoch(needs_torch, tmp_path):
    events_path = tmp_path / "events.jsonl"
    succeeded(run(synthetic("3,16,16", 64, 32, "--model", "cnn", "--channels", "4,8", "--hidden", "16",
                            "--optimizer", "momentum", "--learning-rate", "0.05", "--batch-size", "16"),
                  events_path))
    events = events_of(events_path)
    check_protocol(events, 1)
    # 16x16 -> pool -> 8x8 -> pool -> 4x4
    expected = conv_params(3, 4) + conv_params(4, 8) + fc_params(8 * 4 * 4, 16) + fc_params(16, 10)
    assert events[0]["parameters"] == expected
    assert events[0]["activations_per_example"] == 4 * 16 * 16 + 4 * 8 * 8 + 8 * 8 * 8 + 8 * 4 * 4 + 16 + 10


def test_synthetic_alexnet_one_epoch(needs_torch, tmp_path):
    events_path = tmp_path / "events.jsonl"
    succeeded(run(synthetic("3,32,32", 32, 16, "--model", "alexnet", "--hidden", "16", "--optimizer", "adam",
                            "--learning-rate", "0.0001", "--batch-size", "16"), events_path))
    events = events_of(events_path)
    check_protocol(events, 1)
    # 64, 192, 384, 256, 256 channels; pooled after the 1st, 2nd and 5th: 32 -> 16 -> 8 -> 8 -> 8 -> 4.
    convs = conv_params(3, 64) + conv_params(64, 192) + conv_params(192, 384) + conv_params(384, 256)
    convs += conv_params(256, 256)
    assert events[0]["parameters"] == convs + fc_params(256 * 4 * 4, 16) + fc_params(16, 10)
    outputs = 64 * 32 * 32 + 64 * 16 * 16 + 192 * 16 * 16 + 192 * 8 * 8 + 384 * 8 * 8 + 256 * 8 * 8
    outputs += 256 * 8 * 8 + 256 * 4 * 4
    assert events[0]["activations_per_example"] == outputs + 16 + 10


def test_workers_train_the_same_as_the_main_process(needs_torch, tmp_path):
    args = synthetic("1,10,10", 300, 40, "--hidden", "16", "--epochs", "2", "--batch-size", "25", "--seed", "9")
    ends = []
    for workers in ("0", "1"):
        events_path = tmp_path / f"events-{workers}.jsonl"
        succeeded(run(args + ["--workers", workers], events_path))
        ends.append(check_protocol(events_of(events_path), 2))
    assert ends[0] == ends[1]


# ---- bad input and divergence -----------------------------------------------------------


def test_missing_data_dir_exits_2_naming_it(tmp_path):
    missing = str(tmp_path / "no-such-folder")
    result = run(["--dataset", "mnist", "--data-dir", missing])
    assert result.returncode == 2, result
    assert missing in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_data_dir_without_the_files_exits_2_naming_them(tmp_path):
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(b"")
    result = run(["--dataset", "fashion-mnist", "--data-dir", str(tmp_path)])
    assert result.returncode == 2, result
    assert str(tmp_path) in result.stderr and "t10k-labels-idx1-ubyte" in result.stderr


def test_unknown_model_exits_2():
    result = run(["--model", "resnet"])
    assert result.returncode == 2, result
    assert "--model" in result.stderr and "resnet" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize("flags, named", [
    (["--channels", "8,x"], "--channels"),
    (["--model", "cnn"], "--channels"),
    (["--model", "cnn", "--channels", "4,4,4,4,4,4"], "--channels"),
    (["--learning-rate", "0"], "--learning-rate"),
    (["--dataset", "imagenet"], "--dataset"),
    (["--synthetic-shape", "1,28"], "--synthetic-shape"),
    (["--checkpoint-every", "3"], "--checkpoint-every"),  # without --checkpoint it would do nothing
    (["--checkpoint", "--checkpoint-every", "-1"], "--checkpoint-every"),
    (["--memory-plan", "arena"], "--memory-plan"),
    (["--memory-plan", "keep", "--checkpoint"], "--checkpoint"),  # keep says no checkpoints
    (["--memory-plan", "reuse", "--checkpoint-every", "2"], "--checkpoint-every"),
])
def test_bad_flags_exit_2_naming_the_flag(flags, named):
    result = run(flags)
    assert result.returncode == 2, result
    assert named in result.stderr


def test_nan_loss_exits_3(needs_torch):
    result = run(synthetic("1,8,8", 200, 20, "--hidden", "256,256", "--learning-rate", "1e6"))
    assert result.returncode == 3, result
    assert "nan" in result.stderr.lower() or "inf" in result.stderr.lower()


# ---- --device -------------------------------------------------------------------


def test_device_cpu_trains_and_writes_no_gpu_line(needs_torch, tmp_path):
    events_path = tmp_path / "events.jsonl"
    result = succeeded(run(synthetic("1,8,8", 100, 20, "--hidden", "8", "--epochs", "2", "--device", "cpu"),
                           events_path))
    events = events_of(events_path)
    check_protocol(events, 2)
    assert not any("gpu" in event for event in events), events
    assert "device=cpu" in result.stdout


def test_device_cuda_without_one_exits_2_saying_so(needs_torch, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    result = run(synthetic("1,8,8", 100, 20, "--hidden", "8", "--device", "cuda"))
    assert result.returncode == 2, result
    assert "--device cuda: torch sees no CUDA device" in result.stderr


def test_device_cuda_writes_pytorchs_peaks_after_each_epoch(needs_torch, tmp_path):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here (bench/gpu-check.sh runs this on a GPU machine)")
    events_path = tmp_path / "events.jsonl"
    succeeded(run(synthetic("1,8,8", 100, 20, "--hidden", "8", "--epochs", "2", "--device", "cuda"), events_path))
    gpu = [event["gpu"] for event in events_of(events_path) if "gpu" in event]
    assert len(gpu) == 2, gpu
    for peaks in gpu:
        assert 0 < peaks["allocated_peak"] <= peaks["reserved_peak"], peaks


# ---- --checkpoint (memsweep's recompute plan) ---------------------------------------


@pytest.mark.parametrize("model_args, layers", [
    # memsweep's layers: each conv (with its ReLU), each pool, each hidden layer, the output.
    (["--model", "mlp", "--hidden", "128,64"], 3),
    (["--model", "cnn", "--channels", "4,8", "--hidden", "16"], 6),
    (["--model", "alexnet", "--hidden", "16"], 10),  # 5 convs, 3 pools, fc1, output
])
def test_layers_are_counted_as_memsweep_counts_them(needs_torch, model_args, layers):
    import torch

    args = parse_args(synthetic("3,32,32", 8, 8, *model_args))
    model = build_model(torch, input_shape(args), conv_blocks(args), args.hidden, 10, 0)
    assert len(memsweep_layers(model)) == layers


@pytest.mark.parametrize("layers, every, segments", [
    (10, 0, [(0, 4), (4, 8), (8, 10)]),  # k = ceil(sqrt(10)) = 4
    (9, 0, [(0, 3), (3, 6), (6, 9)]),  # k = 3, whole segments
    (6, 0, [(0, 3), (3, 6)]),
    (3, 0, [(0, 2), (2, 3)]),
    (10, 1, [(i, i + 1) for i in range(10)]),
    (10, 20, [(0, 10)]),  # one segment, the last: nothing recomputed
])
def test_checkpoint_segments(layers, every, segments):
    assert checkpoint_segments(layers, every) == segments


def test_checkpointed_model_gives_the_same_loss_and_gradients_bit_for_bit(needs_torch):
    import torch
    import torch.nn.functional as F

    args = parse_args(synthetic("3,32,32", 8, 8, "--model", "alexnet", "--hidden", "16"))
    (images, labels), _ = load_dataset(args)
    x, y = torch.from_numpy(images[:8]), torch.from_numpy(labels[:8]).long()

    def loss_and_gradients(every):
        model = build_model(torch, (3, 32, 32), conv_blocks(args), [16], 10, 5)
        if every is not None:
            model = checkpointed_model(torch, model, every)
        loss = F.nll_loss(F.log_softmax(model(x), dim=1), y)
        loss.backward()
        return loss.detach(), [p.grad for p in model.parameters()]

    plain_loss, plain_gradients = loss_and_gradients(None)
    for every in (0, 1, 2, 3):
        loss, gradients = loss_and_gradients(every)
        assert torch.equal(loss, plain_loss), every
        assert len(gradients) == len(plain_gradients) == 14  # 7 weighted layers, weights and biases
        for index, (got, want) in enumerate(zip(gradients, plain_gradients)):
            assert got is not None, f"--checkpoint-every {every}: parameter {index} got no gradient"
            assert torch.equal(got, want), f"--checkpoint-every {every}: parameter {index}"


def test_checkpoint_trains_the_same_epochs(needs_torch, tmp_path):
    args = synthetic("3,16,16", 96, 32, "--model", "cnn", "--channels", "4,8", "--hidden", "16", "--epochs", "2",
                     "--batch-size", "16", "--optimizer", "momentum", "--learning-rate", "0.05")
    ends = []
    runs = ([], ["--checkpoint"], ["--checkpoint", "--checkpoint-every", "1"],
            ["--memory-plan", "recompute", "--checkpoint-every", "1"], ["--memory-plan", "reuse"])
    for extra in runs:
        events_path = tmp_path / f"events-{len(ends)}.jsonl"
        result = succeeded(run(args + extra, events_path))
        ends.append(check_protocol(events_of(events_path), 2))
        checkpointed = "--checkpoint" in extra or "recompute" in extra
        assert ("checkpoint: every" in result.stdout) == checkpointed, (extra, result.stdout)
    for extra, end in zip(runs[1:], ends[1:]):
        assert end == ends[0], extra  # the losses and accuracies as printed in the events, every digit


def peak_rss_mib(args):
    """ru_maxrss of the script run as a child, in MiB. Each allocation of 128 KiB or more its own mapping,
    returned when freed (MALLOC_MMAP_THRESHOLD_): RSS then follows the live tensors rather than what glibc's
    heap kept of earlier ones, which made the same run's peak vary by 90 MiB here."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1", MALLOC_MMAP_THRESHOLD_="131072")
    env.pop("MEMSWEEP_EVENTS_FD", None)
    child = subprocess.Popen([sys.executable, SCRIPT, "--threads", "1", *args], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, output
    return usage.ru_maxrss / 1024.0


def test_checkpoint_lowers_the_peak_of_alexnet_at_batch_256(needs_torch):
    # One step of batch 256: its activations are about 280 MiB of the peak (the interpreter, torch and the
    # data the rest). Measured here: 579-581 MiB without, 537-539 with (k = 4 of 10 layers).
    args = synthetic("3,32,32", 256, 16, "--model", "alexnet", "--hidden", "128", "--batch-size", "256")
    without = peak_rss_mib(args)
    with_checkpoints = peak_rss_mib(args + ["--checkpoint"])
    print(f"AlexNet-like, batch 256, peak RSS: {without:.1f} MiB without --checkpoint, {with_checkpoints:.1f} with")
    assert with_checkpoints < without - 20.0, (without, with_checkpoints)
