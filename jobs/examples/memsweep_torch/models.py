"""The networks as memsweep builds them (model_spec.hpp, plan.cpp), their initial weights, and
activation checkpointing segmented as memsweep's recompute memory plan."""

import math
import sys

import numpy as np

from .rng import Rng, mix_seed, stable_hash

MODELS = ("mlp", "cnn", "alexnet")
OPTIMIZERS = ("sgd", "momentum", "adam")
MEMORY_PLANS = ("keep", "reuse", "recompute")  # memory_plan.hpp's names
# model_spec.cpp: (out_channels, pool)
ALEXNET_BLOCKS = ((64, True), (192, True), (384, False), (256, False), (256, True))
KERNEL = 3


def conv_blocks(args):
    if args.model == "cnn":
        return [(channels, True) for channels in args.channels]
    if args.model == "alexnet":
        return list(ALEXNET_BLOCKS)
    return []


def conv_output_shape(shape, blocks):
    """model_spec.cpp's conv_output_shape: each pool halves the sides, rounding down."""
    c, h, w = shape
    for out, pool in blocks:
        c = out
        if pool:
            h, w = h // 2, w // 2
    return c, h, w


def layers_text(shape, blocks, hidden, classes):
    """The network in one word for the log, e.g. 3x16x16-c4p-c8p-16-10 (an MLP's input as its width)."""
    return "-".join(
        [f"{shape[0]}x{shape[1]}x{shape[2]}" if blocks else str(shape[0] * shape[1] * shape[2])]
        + [f"c{out}{'p' if pool else ''}" for out, pool in blocks]
        + [str(width) for width in hidden]
        + [str(classes)]
    )


def layer_plan(shape, blocks, hidden, classes):
    """The layers in order with memsweep's tensor names and init stddevs (float32, as plan.cpp)."""
    c, h, w = shape
    layers = []
    for index, (out, pool) in enumerate(blocks, start=1):
        stddev = np.sqrt(np.float32(2.0) / np.float32(c * KERNEL * KERNEL))
        layers.append(("conv", f"conv{index}", c, out, stddev))
        if pool:
            layers.append(("pool", f"pool{index}", out, out, None))
            h, w = h // 2, w // 2
        c = out
    inputs = c * h * w
    layers.append(("flatten", "flatten", None, None, None))
    for index, width in enumerate(hidden, start=1):
        layers.append(("fc", f"fc{index}", inputs, width, np.sqrt(np.float32(2.0) / np.float32(inputs))))
        inputs = width
    layers.append(("output", "output", inputs, classes, np.sqrt(np.float32(1.0) / np.float32(inputs))))
    return layers, (c, h, w)


def activations_per_example(shape, blocks, hidden, classes):
    """model_counts.cpp's activations_per_example: layer outputs, the input excluded."""
    c, h, w = shape
    count = 0
    for out, pool in blocks:
        c = out
        count += c * h * w
        if pool:
            h, w = h // 2, w // 2
            count += c * h * w
    return count + sum(hidden) + classes


def initial_values(name, count, stddev, seed):
    """ParameterStore::allocate's draw of one weight tensor, in its plain layout."""
    rng = Rng(mix_seed(seed, stable_hash(name)))
    return rng.normal(count).astype(np.float32) * np.float32(stddev)


def build_model(torch, shape, blocks, hidden, classes, seed):
    nn = torch.nn
    layers, _ = layer_plan(shape, blocks, hidden, classes)
    modules = []
    for kind, name, inputs, outputs, stddev in layers:
        if kind == "pool":
            modules.append(nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        if kind == "flatten":
            modules.append(nn.Flatten())
            continue
        if kind == "conv":
            module = nn.Conv2d(inputs, outputs, kernel_size=KERNEL, stride=1, padding=1, bias=True)
        else:
            module = nn.Linear(inputs, outputs, bias=True)
        with torch.no_grad():
            weights = initial_values(f"{name}.weights", module.weight.numel(), stddev, seed)
            module.weight.copy_(torch.from_numpy(weights).view_as(module.weight))
            module.bias.zero_()
        modules.append(module)
        if kind != "output":
            modules.append(nn.ReLU(inplace=True))  # like the fused ReLU: only its output is kept
    return nn.Sequential(*modules)


def memsweep_layers(model):
    """The model's modules grouped as memsweep's trainer counts its layers (make_plan_layout): a group ends
    with a ReLU (a convolution's or a hidden layer's), a max-pooling, or the output layer; the flatten joins
    the fully connected layer after it. Returns (start, end) index ranges into the Sequential."""
    nn = sys.modules["torch"].nn
    ranges, start = [], 0
    for index, module in enumerate(model):
        if isinstance(module, (nn.ReLU, nn.MaxPool2d)) or index == len(model) - 1:
            ranges.append((start, index + 1))
            start = index + 1
    return ranges


def checkpoint_segments(layer_count, every):
    """Layer ranges [first, last) of the segments: K layers each from the input, the last one shorter if
    L is not a multiple of K. every = 0: K = ceil(sqrt(L)), memsweep's default."""
    k = every if every > 0 else math.ceil(math.sqrt(layer_count))
    return [(first, min(first + k, layer_count)) for first in range(0, layer_count, k)]


def checkpointed_model(torch, model, every):
    """`model` (the Sequential of build_model) whose training forward pass keeps only each segment's input
    and recomputes the segment in the backward pass. The same modules, so the same parameters in the same
    order (the optimizer's state lines up) and the same arithmetic."""
    from torch.utils.checkpoint import checkpoint

    layers = memsweep_layers(model)
    layer_segments = checkpoint_segments(len(layers), every)
    segments = [(layers[first][0], layers[last - 1][1]) for first, last in layer_segments]

    class Checkpointed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = model
            self.layer_count = len(layers)
            self.every = layer_segments[0][1]  # the first segment is a whole one
            self.segments = segments

        def forward(self, x):
            if not (self.training and torch.is_grad_enabled()):
                return self.body(x)
            for start, end in self.segments[:-1]:
                run = lambda values, start=start, end=end: self.body[start:end](values)  # noqa: E731
                # Non-reentrant: the first segment's input (the batch) needs no gradient, and its
                # parameters still get theirs (the reentrant form would give them none).
                x = checkpoint(run, x, use_reentrant=False)
            start, end = self.segments[-1]
            return self.body[start:end](x)

    return Checkpointed()
