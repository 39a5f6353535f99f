"""What the tests that run the real memsweep binary, or the real PyTorch reference, share."""

import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def memsweep_binary():
    """$MEMSWEEP_EXECUTABLE (ctest sets it), else build/memsweep; a missing binary fails the test."""
    binary = os.environ.get("MEMSWEEP_EXECUTABLE") or os.path.join(REPO, "build", "memsweep")
    if not os.access(binary, os.X_OK):
        pytest.fail(f"no memsweep binary at {binary}: build it (cmake --build build), or set MEMSWEEP_EXECUTABLE")
    return binary


def torch_or_skip(needed_for):
    """Debian's python3-torch: required in CI (CI=true), a loud skip elsewhere."""
    try:
        import torch  # noqa: F401
    except ImportError as error:
        why = f"python3-torch is missing ({error}): {needed_for} cannot run"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip("LOUD SKIP: " + why)
