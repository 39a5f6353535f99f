"""What the program reports when it stops: its name in messages, its exit statuses, bad input."""

PROG = "torch_train.py"
EXIT_BAD_INPUT = 2
EXIT_DIVERGED = 3
EXIT_CUDA_OUT_OF_MEMORY = 4


class InputError(Exception):
    """Bad input: exit 2 with the message."""
