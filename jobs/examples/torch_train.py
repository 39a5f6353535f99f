#!/usr/bin/python3
"""A PyTorch reference trainer for memsweep's program trials.

memsweep runs this script as a child process and measures it from outside; it
trains the same network as memsweep's own oneDNN trainer (src/trainer), on the
same data, so that the memory and the accuracy of the two can be compared.

This file is the training loop, written to be copied; the package memsweep_torch
beside it holds what makes it match memsweep value for value: its docstring
(memsweep_torch/__init__.py) says what matches exactly and where it differs.

--device cpu (the default) or cuda: where the model, its batches and its
optimizer live; cuda is torch's current CUDA device (CUDA_VISIBLE_DEVICES
chooses it), and bad input when torch sees none.

--checkpoint: activation checkpointing (torch.utils.checkpoint), segmented as
memsweep's `recompute` memory plan segments its network: the layers counted
as memsweep's trainer counts them (src/trainer/plan.cpp make_plan_layout:
each convolution with its ReLU, each pooling, each hidden fully connected
layer with its ReLU, the output layer; the flatten goes with the layer after
it), cut into segments of K layers from the input, K = --checkpoint-every
(0, the default: ceil(sqrt(L)) for L layers, memsweep's
kRecomputeEveryDefault). The forward pass keeps each segment's input only
(the output of every K-th layer) and the backward pass recomputes the
segment's activations from it. The last segment is run as usual: the
backward pass needs its activations at once, so recomputing them would cost
time and save nothing at the peak. The arithmetic is the same (same
modules, same inputs): the losses equal those without --checkpoint.
Evaluation runs under no_grad, without checkpoints.

--memory-plan keep|reuse|recompute: memsweep's `{memory_plan}` placeholder,
so that one grid can cross the plan with the trainer. `recompute` is
--checkpoint (with --checkpoint-every K for `{recompute_every}`). PyTorch has
no keep or reuse of its own to choose: it frees each tensor as soon as its
last reference is gone, so both train as PyTorch does.

Flags beyond memsweep's placeholders: --synthetic-seed (the synthetic
dataset's own seed, memsweep's `synthetic.seed`, default 1 as there; no
placeholder carries it, so pass it as a [params] value if a sweep changes it)
and --workers N (a torch DataLoader with N worker processes gathers the
batches of both phases; 0, the default, gathers them in this process). --seed
is memsweep's {seed}: the training seed of the repeat.

Events: when MEMSWEEP_EVENTS_FD is set, one JSON line per step of the run
(parameters, each epoch's start, evaluation and result, GPU peaks, running out
of CUDA memory), as memsweep_torch/events.py describes.

Exit status: 0 done; 2 bad input (a flag, a missing or malformed dataset
file, an events descriptor that is not open); 3 the training loss became NaN
or infinite; 4 CUDA ran out of memory (--device cuda; the events say so);
1 the events could not be written (or any other failure).
"""

import math
import os
import sys
import time

try:
    import numpy as np
except ImportError as _error:  # e.g. run by another python3 than Debian's /usr/bin/python3
    print(f"torch_train.py: error: numpy cannot be imported by {sys.executable}: {_error}", file=sys.stderr)
    sys.exit(2)

# The package lives beside this script: its folder goes on sys.path even where Python leaves it off
# (python3 -P, PYTHONSAFEPATH, this file imported from elsewhere), so any working folder will do.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from memsweep_torch.batches import Schedule, Splits, batch_source  # noqa: E402
from memsweep_torch.cli import parse_args  # noqa: E402
from memsweep_torch.datasets import class_count, input_shape, load_dataset  # noqa: E402
from memsweep_torch.errors import (  # noqa: E402
    EXIT_BAD_INPUT, EXIT_CUDA_OUT_OF_MEMORY, EXIT_DIVERGED, PROG, InputError)
from memsweep_torch.events import Events, EventsError, emit_gpu_peaks  # noqa: E402
from memsweep_torch.models import (  # noqa: E402
    activations_per_example, build_model, checkpointed_model, conv_blocks, layers_text)

# -log(FLT_MIN): the largest loss of one example in loss.cpp.
MAX_EXAMPLE_LOSS = -math.log(float(np.finfo(np.float32).tiny))


def make_optimizer(torch, args, parameters):
    if args.optimizer == "sgd":
        return torch.optim.SGD(parameters, lr=args.learning_rate)
    if args.optimizer == "momentum":
        return torch.optim.SGD(parameters, lr=args.learning_rate, momentum=args.momentum, dampening=0.0)
    return torch.optim.Adam(
        parameters, lr=args.learning_rate, betas=(args.beta1, args.beta2), eps=args.epsilon, weight_decay=0.0
    )


def train(args, events):
    shape, classes = input_shape(args), class_count(args)
    blocks = conv_blocks(args)
    (train_images, train_labels), (test_images, test_labels) = load_dataset(args)  # bad files fail before torch loads

    try:
        import torch
    except ImportError as error:
        raise InputError(f"PyTorch cannot be imported by {sys.executable}: {error}") from None
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)  # nothing random is drawn from it; set for any later addition
    if args.device == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda: torch sees no CUDA device (torch.cuda.is_available() is false)")
    device = torch.device(args.device)
    if args.device == "cuda":
        # What the device offers this process once its context is made: under
        # memsweep's GPU limit, the limit less the context (docs/runner.md, "A GPU limit").
        free, total = torch.cuda.mem_get_info()
        print(f"cuda mem_get_info: free {free} total {total}", flush=True)

    # SplitView::head: the first N of each split; the whole dataset stays loaded.
    if args.max_train_examples:
        train_images, train_labels = train_images[: args.max_train_examples], train_labels[: args.max_train_examples]
    if args.max_test_examples:
        test_images, test_labels = test_images[: args.max_test_examples], test_labels[: args.max_test_examples]
    data = Splits(torch.from_numpy(train_images), torch.from_numpy(train_labels),
                  torch.from_numpy(test_images), torch.from_numpy(test_labels))
    n_train, n_test = train_labels.shape[0], test_labels.shape[0]
    batch = min(args.batch_size, n_train)  # trainer_config(); evaluation uses it too

    model = build_model(torch, shape, blocks, args.hidden, classes, args.seed).to(device)
    checkpointing = ""
    if args.checkpoint:
        model = checkpointed_model(torch, model, args.checkpoint_every)
        checkpointing = f" checkpoint: every {model.every} of {model.layer_count} layers kept"
    optimizer = make_optimizer(torch, args, model.parameters())
    parameters = sum(p.numel() for p in model.parameters())
    events.emit(parameters=parameters,
                activations_per_example=activations_per_example(shape, blocks, args.hidden, classes))
    layers = layers_text(shape, blocks, args.hidden, classes)
    print(f"{PROG}: {args.dataset} {args.model} {layers}, {parameters} parameters, {n_train} train / {n_test} test "
          f"examples, {args.optimizer} lr={args.learning_rate} batch={batch} threads={args.threads} "
          f"workers={args.workers} device={args.device}{checkpointing}", flush=True)

    schedule = Schedule(n_train, n_test, batch, args.seed)
    batches = batch_source(torch, data, schedule, args.workers, device)

    try:
        return train_epochs(args, events, torch, F, model, optimizer, schedule, batches, n_train, n_test, device)
    except RuntimeError as error:
        # torch.cuda.OutOfMemoryError (1.13+) is a RuntimeError; older versions raise a bare one.
        if args.device != "cuda" or "out of memory" not in str(error):
            raise
        events.emit(out_of_memory="cuda")
        print(f"{PROG}: CUDA ran out of memory: {str(error).splitlines()[0]}", file=sys.stderr, flush=True)
        return EXIT_CUDA_OUT_OF_MEMORY


def train_epochs(args, events, torch, F, model, optimizer, schedule, batches, n_train, n_test, device):
    for epoch in range(1, args.epochs + 1):
        start = time.monotonic()
        events.emit(epoch=epoch, phase="train")
        schedule.start("train", epoch - 1)
        steps = len(schedule)
        model.train()
        loss_sum = 0.0
        for step, (x, y) in enumerate(batches(), start=1):
            target = y.long()
            log_p = F.log_softmax(model(x), dim=1)
            loss = F.nll_loss(log_p, target)
            with torch.no_grad():
                # loss.cpp: the mean of -log(max(p, FLT_MIN)), in double.
                per_example = -log_p.gather(1, target.unsqueeze(1)).double()
                batch_loss = per_example.clamp(max=MAX_EXAMPLE_LOSS).mean().item()
            if not math.isfinite(batch_loss):
                print(f"{PROG}: the training loss became {batch_loss} at epoch {epoch}, step {step} of {steps} "
                      f"(learning rate {args.learning_rate})", file=sys.stderr, flush=True)
                return EXIT_DIVERGED
            optimizer.zero_grad(set_to_none=False)
            loss.backward()
            optimizer.step()
            loss_sum += batch_loss * y.shape[0]
        events.emit(phase="eval")
        schedule.start("test")
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in batches():
                probabilities = F.softmax(model(x), dim=1)
                correct += int((probabilities.argmax(dim=1) == y.long()).sum())
        mean_loss = loss_sum / n_train
        accuracy = correct / n_test
        events.emit(epoch=epoch, loss=mean_loss, accuracy=accuracy)
        emit_gpu_peaks(events, torch, device)
        print(f"epoch {epoch}/{args.epochs}: loss {mean_loss:.4f}, test accuracy {accuracy:.4f}, "
              f"{time.monotonic() - start:.1f} s", flush=True)
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    events = None
    try:
        events = Events(os.environ.get("MEMSWEEP_EVENTS_FD"))
        return train(args, events)
    except InputError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except EventsError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    finally:
        if events is not None:
            events.close()


if __name__ == "__main__":
    sys.exit(main())
