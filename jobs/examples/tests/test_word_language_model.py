"""jobs/examples/word_language_model.py, a stand-in for pytorch/examples word_language_model on random tokens:
both architectures train with the example's flags and print its progress and end-of-epoch lines (its memory
against the sequence length is measured by analysis/tests/test_program_sweep.py, as program trials).

Run: PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m pytest -q -p no:cacheprovider jobs/examples/tests
"""

import os
import re
import subprocess
import sys

import pytest

sys.dont_write_bytecode = True

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "word_language_model.py")
IN_CI = os.environ.get("CI") == "true"

try:
    import torch  # noqa: F401

    TORCH_PROBLEM = None
except Exception as error:  # ImportError, or a broken installation
    TORCH_PROBLEM = f"{type(error).__name__}: {error}"

# The example's end-of-epoch line, as it prints it (main.py).
END_OF_EPOCH = re.compile(r"^\| end of epoch +(\d+) \| time: +[0-9.]+s \| valid loss +([0-9.]+) \| "
                          r"valid ppl +([0-9.]+)$", re.M)


@pytest.fixture(autouse=True)
def _torch():
    if TORCH_PROBLEM:
        if IN_CI:
            pytest.fail(f"python3-torch is required in CI: {TORCH_PROBLEM}")
        pytest.skip(f"LOUD SKIP: python3-torch is unusable here ({TORCH_PROBLEM})")


@pytest.mark.parametrize("model", ["LSTM", "Transformer"])
def test_each_architecture_trains_and_prints_the_examples_epoch_line(model):
    done = subprocess.run([sys.executable, SCRIPT, "--model", model, "--bptt", "16", "--batch_size", "4",
                           "--emsize", "16", "--nhid", "16", "--epochs", "2", "--train-tokens", "2048",
                           "--valid-tokens", "400", "--vocab", "50", "--log-interval", "8"],
                          capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=300)
    assert done.returncode == 0, done.stderr
    epochs = END_OF_EPOCH.findall(done.stdout)
    assert [int(e) for e, _, _ in epochs] == [1, 2], done.stdout
    for _, loss, ppl in epochs:
        # random tokens: nothing to learn below a uniform guess over 50 tokens, by much
        assert 2.0 < float(loss) < 6.0 and float(ppl) > 1.0
    assert "| epoch   1 |     8 batches |" in done.stdout, "the progress line every --log-interval batches"
