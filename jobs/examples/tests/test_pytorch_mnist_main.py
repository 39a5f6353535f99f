"""jobs/examples/pytorch_mnist_main.py, PyTorch's MNIST example as a program trial: it reads the IDX files
(raw or gzip) from --data-dir and trains with the example's own flags, writing no events lines.

Run: PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m pytest -q -p no:cacheprovider jobs/examples/tests
"""

import gzip
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

sys.dont_write_bytecode = True

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pytorch_mnist_main.py")
IN_CI = os.environ.get("CI") == "true"

try:
    import torch  # noqa: F401

    TORCH_PROBLEM = None
except Exception as error:  # ImportError, or a broken installation
    TORCH_PROBLEM = f"{type(error).__name__}: {error}"


def _idx(array):
    header = struct.pack(">BBBB", 0, 0, 8, array.ndim) + struct.pack(">" + "I" * array.ndim, *array.shape)
    return header + array.astype(np.uint8).tobytes()


def _write_mnist(folder, train, test, compress):
    rng = np.random.default_rng(0)
    for prefix, count in (("train", train), ("t10k", test)):
        for kind, array in (("images-idx3-ubyte", rng.integers(0, 256, (count, 28, 28))),
                            ("labels-idx1-ubyte", rng.integers(0, 10, count))):
            name = os.path.join(folder, f"{prefix}-{kind}")
            data = _idx(array)
            if compress:
                with gzip.open(name + ".gz", "wb") as f:
                    f.write(data)
            else:
                with open(name, "wb") as f:
                    f.write(data)


@pytest.mark.parametrize("compress", [False, True])
def test_trains_one_epoch_on_idx_files_with_the_examples_flags(tmp_path, compress):
    if TORCH_PROBLEM:
        if IN_CI:
            pytest.fail(f"torch is needed: {TORCH_PROBLEM}")
        pytest.skip(f"torch is needed: {TORCH_PROBLEM}")
    _write_mnist(str(tmp_path), train=12, test=5, compress=compress)
    run = subprocess.run([sys.executable, SCRIPT, "--batch-size", "4", "--test-batch-size", "5", "--lr", "0.5",
                          "--epochs", "2", "--gamma", "0.7", "--log-interval", "1", "--seed", "3", "--no-cuda",
                          "--data-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=120, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert run.returncode == 0, run.stderr
    assert "Train Epoch: 2 [8/12 (67%)]" in run.stdout
    assert run.stdout.count("Test set: Average loss:") == 2
    assert "/5 (" in run.stdout


def test_missing_files_fail_with_the_path(tmp_path):
    if TORCH_PROBLEM:
        pytest.skip(f"torch is needed: {TORCH_PROBLEM}")
    run = subprocess.run([sys.executable, SCRIPT, "--epochs", "1", "--data-dir", str(tmp_path / "none")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "train-images-idx3-ubyte" in run.stderr
