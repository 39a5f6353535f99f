"""The command line: the flags, parsed and checked as memsweep checks its own sweep files."""

import argparse
import math
import sys

from .datasets import DATASETS, input_shape
from .errors import EXIT_BAD_INPUT, PROG
from .models import MODELS, conv_blocks, conv_output_shape
from .rng import MASK64

OPTIMIZERS = ("sgd", "momentum", "adam")
MEMORY_PLANS = ("keep", "reuse", "recompute")  # memory_plan.hpp's names


class Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"{PROG}: error: {message}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def int_list(text):
    if text.strip() == "":
        return []
    values = []
    for item in text.split(","):
        try:
            value = int(item)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, found {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"every value must be at least 1, found {value}")
        values.append(value)
    return values


def shape_triple(text):
    values = int_list(text)
    if len(values) != 3:
        raise argparse.ArgumentTypeError(f"expected C,H,W (three whole numbers >= 1), found {text!r}")
    return values


def parse_args(argv):
    p = Parser(prog=PROG, description="PyTorch reference trainer matching memsweep's oneDNN trainer.")
    p.add_argument("--dataset", choices=DATASETS, default="synthetic")
    p.add_argument("--data-dir", default=None, help="the folder holding the dataset's files directly")
    p.add_argument("--model", choices=MODELS, default="mlp")
    p.add_argument("--channels", type=int_list, default=[], help="cnn: conv blocks' channels, e.g. 16,32")
    p.add_argument("--hidden", type=int_list, default=[128], help="hidden widths, e.g. 128,64")
    p.add_argument("--optimizer", choices=OPTIMIZERS, default="sgd")
    p.add_argument("--learning-rate", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.999)
    p.add_argument("--epsilon", type=float, default=1e-8)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0, help="memsweep's training seed (weights and batch order)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-train-examples", type=int, default=0, help="the first N training examples (0: all)")
    p.add_argument("--max-test-examples", type=int, default=0, help="the first N test examples (0: all)")
    p.add_argument("--synthetic-shape", type=shape_triple, default=[1, 28, 28])
    p.add_argument("--synthetic-classes", type=int, default=10)
    p.add_argument("--synthetic-train-size", type=int, default=6000)
    p.add_argument("--synthetic-test-size", type=int, default=1000)
    p.add_argument("--synthetic-noise", type=float, default=0.5)
    p.add_argument("--synthetic-seed", type=int, default=1, help="the dataset's own seed (memsweep's default: 1)")
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes (0: batches in this process)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where to train; cuda writes PyTorch's GPU memory peaks as events")
    p.add_argument("--checkpoint", action="store_true",
                   help="activation checkpointing in segments of --checkpoint-every layers, as memsweep's "
                        "recompute memory plan: each segment's activations recomputed in the backward pass")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="K",
                   help="with --checkpoint: layers per segment, counted as memsweep counts them (each conv, "
                        "pool, hidden and the output layer); 0 (default): ceil(sqrt(layers))")
    p.add_argument("--memory-plan", choices=MEMORY_PLANS, default=None,
                   help="memsweep's {memory_plan}: recompute is --checkpoint; keep and reuse train as PyTorch "
                        "does (it frees each tensor once its last reference is gone)")
    args = p.parse_args(argv)
    if args.memory_plan is not None:
        if args.checkpoint and args.memory_plan != "recompute":
            p.error(f"argument --checkpoint: is memsweep's recompute plan, but --memory-plan says "
                    f"{args.memory_plan}")
        args.checkpoint = args.memory_plan == "recompute"

    def need(condition, flag, what, value):
        if not condition:
            p.error(f"argument {flag}: {what}, found {value}")

    need(math.isfinite(args.learning_rate) and args.learning_rate > 0, "--learning-rate", "expected a number > 0",
         args.learning_rate)
    for flag, value in (("--momentum", args.momentum), ("--beta1", args.beta1), ("--beta2", args.beta2)):
        need(0.0 <= value < 1.0, flag, "expected a number >= 0 and < 1", value)
    need(math.isfinite(args.epsilon) and args.epsilon > 0, "--epsilon", "expected a number > 0", args.epsilon)
    need(args.batch_size >= 1, "--batch-size", "expected a whole number >= 1", args.batch_size)
    need(args.epochs >= 1, "--epochs", "expected a whole number >= 1", args.epochs)
    need(0 <= args.seed <= MASK64, "--seed", "expected a whole number from 0 to 2^64-1", args.seed)
    need(args.threads >= 1, "--threads", "expected a whole number >= 1", args.threads)
    need(args.max_train_examples >= 0, "--max-train-examples", "expected a whole number >= 0 (0: all)",
         args.max_train_examples)
    need(args.max_test_examples >= 0, "--max-test-examples", "expected a whole number >= 0 (0: all)",
         args.max_test_examples)
    need(args.workers >= 0, "--workers", "expected a whole number >= 0", args.workers)
    need(args.checkpoint_every >= 0, "--checkpoint-every", "expected a whole number >= 0 (0: ceil(sqrt(layers)))",
         args.checkpoint_every)
    need(args.checkpoint or args.checkpoint_every == 0, "--checkpoint-every",
         "is only meaningful with --checkpoint (pass both, or 0)", args.checkpoint_every)
    if args.dataset == "synthetic":
        need(args.synthetic_classes >= 2, "--synthetic-classes", "expected a whole number >= 2",
             args.synthetic_classes)
        need(args.synthetic_train_size >= 1, "--synthetic-train-size", "expected a whole number >= 1",
             args.synthetic_train_size)
        need(args.synthetic_test_size >= 1, "--synthetic-test-size", "expected a whole number >= 1",
             args.synthetic_test_size)
        need(math.isfinite(args.synthetic_noise) and 0.0 <= args.synthetic_noise <= 10.0, "--synthetic-noise",
             "expected a number from 0 to 10", args.synthetic_noise)
        need(0 <= args.synthetic_seed <= MASK64, "--synthetic-seed", "expected a whole number from 0 to 2^64-1",
             args.synthetic_seed)
    if args.model == "mlp":
        need(len(args.hidden) >= 1, "--hidden", "an MLP needs at least one hidden layer", "none")
    if args.model == "cnn":
        need(len(args.channels) >= 1, "--channels", "a CNN needs at least one convolution block", "none")
    if args.model != "mlp":
        _, height, width = input_shape(args)
        _, h, w = conv_output_shape(input_shape(args), conv_blocks(args))
        fitting, side = 0, min(height, width)
        while side > 1:
            fitting, side = fitting + 1, side // 2
        pools = sum(1 for _, pool in conv_blocks(args) if pool)
        need(h > 0 and w > 0, "--channels" if args.model == "cnn" else "--model",
             f"{pools} pooling blocks are too many for a {height}x{width} input: each 2x2 pooling halves it, "
             f"so at most {fitting} fit", args.model if args.model == "alexnet" else ",".join(map(str, args.channels)))
    return args
