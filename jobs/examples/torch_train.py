#!/usr/bin/python3
"""A PyTorch reference trainer for memsweep's program trials.

memsweep runs this script as a child process and measures it from outside; it
trains the same network as memsweep's own oneDNN trainer (src/trainer), on the
same data, so that the memory and the accuracy of the two can be compared.

What matches memsweep exactly
  * The networks (include/memsweep/model_spec.hpp, src/trainer/plan.cpp):
    conv blocks of a 3x3 convolution (stride 1, padding 1, with bias) -> ReLU
    -> 2x2 max-pool of stride 2 (rounding down); for `cnn` one pooled block per
    --channels entry, for `alexnet` the fixed 64p-192p-384-256-256p stack;
    then fully connected hidden layers (--hidden) each followed by ReLU, and
    the output layer. An MLP flattens the image (C*H*W inputs).
  * The initial weights, value for value: each weight tensor is drawn, in its
    plain layout (oihw / oi), as float(normal) * stddev from mt19937_64 seeded
    with mix_seed(seed, fnv1a("conv1.weights" etc.)), normal by Box-Muller
    dropping the second value (src/common/random.cpp); stddev sqrt(2/fan_in)
    (He) for convolutions and hidden layers, sqrt(1/fan_in) for the output;
    biases zero (src/trainer/parameters.cpp). mt19937_64 is reimplemented
    with numpy below.
  * The batch order, value for value: per epoch the Fisher-Yates permutation
    of src/dataset/batches.cpp seeded with mix_seed(seed, epoch - 1); batches
    of --batch-size rows, the last one partial (and trained on).
  * Loss and gradient: softmax cross-entropy, mean over the batch; the
    reported loss clamps each example's -log p at -log(FLT_MIN) like
    src/trainer/loss.cpp (the gradient is (p - onehot) / rows in both).
  * Optimizers (src/trainer/optimizer.cpp): SGD; momentum in PyTorch's form
    (v = mu v + g; w -= lr v); Adam with bias correction. torch.optim's SGD
    and Adam compute the same formulas.
  * Data (src/dataset): IDX files NAME or NAME.gz (raw first), CIFAR-10
    binary data_batch_1.bin and the batches that follow it consecutively plus
    test_batch.bin (each raw or .gz), pixels scaled to float32 value / 255, no
    standardisation; the whole dataset in memory; --max-train-examples and
    --max-test-examples keep the first N of a split (SplitView::head). The
    synthetic dataset is memsweep's generator reproduced exactly (prototypes
    uniform in [0, 1], image = clamp(prototype + noise * N(0, 1)), uniform
    labels, the same random streams; src/dataset/synthetic.cpp).
  * An epoch's loss is the mean training loss over its examples; its accuracy
    is the test accuracy after the epoch (argmax of the softmax, first maximum
    on ties), evaluated in batches of the training batch size.

Where it differs (it cannot match these)
  * The kernels, hence the arithmetic. memsweep runs every layer as a oneDNN
    2.6 primitive with layouts oneDNN picks (blocked, e.g. nChw16c), ReLU fused
    as a post-op and softmax as a primitive. PyTorch 1.13 picks per call:
    convolutions go to ATen's oneDNN path (mkldnn_convolution, plain NCHW in
    and out) for batches of more than one row, else to im2col + GEMM
    (slow_conv2d); fully connected layers are addmm on the BLAS torch is
    linked to (Debian's torch: whatever libblas.so.3 points to; with the
    reference netlib BLAS they are several times slower than oneDNN's inner
    product); max-pooling and ReLU are ATen's own loops. Sums run in other
    orders, so the weights differ in the last bits after the first steps and
    the runs drift apart slowly, like one program on two CPUs: with the same
    seed the epochs' losses and accuracies agree to about 4 digits (MNIST MLP,
    CIFAR-10 CNN, synthetic CNN and AlexNet-like, checked against memsweep's
    trainer), not bit for bit.
  * libm: log, cos and sin come from numpy here and from glibc there. A
    1-ulp difference in a double would almost never change the float32 it is
    rounded to; in the cases checked against memsweep (synthetic 6000x784 and
    3x16x16 sets, odd pixel counts, a CNN's initial weights, batch orders of
    60,000) every value was bit-identical.
  * Memory layout and what is held: plain NCHW tensors instead of oneDNN's
    blocked layouts (no padding, no reorders, no shared scratchpad); PyTorch
    allocates activations, gradients of activations and temporaries per step
    (and frees them after it) where memsweep allocates every buffer once;
    max-pooling keeps int64 indices (oneDNN: its own workspace); labels are
    int32 in memory and int64 per batch; evaluation runs under no_grad. On
    top come the interpreter and the PyTorch library itself.
  * Updates: memsweep updates each layer as soon as its gradients are ready
    during the backward pass; here the optimizer steps after the whole
    backward pass (the same values).
  * Threads: --threads sets PyTorch's intra-op (OpenMP) threads; memsweep
    sets oneDNN's. The batch order, the synthetic data and the loss bookkeeping
    run in Python on the main thread.

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

Events: when MEMSWEEP_EVENTS_FD is set (a descriptor number, or else a path
opened for append), one JSON object per line, flushed:
  {"parameters": N, "activations_per_example": M}     before training
  {"epoch": E, "phase": "train"}                       when epoch E starts
  {"phase": "eval"}                                    when its evaluation starts
  {"epoch": E, "loss": L, "accuracy": A}               when epoch E ends
  {"gpu": {"device": D, "allocated_peak": N, "reserved_peak": N}}
                                                       with --device cuda, after each epoch: PyTorch's
                                                       max_memory_allocated() and max_memory_reserved()
                                                       of device D, in bytes, beside NVML's figure
  {"out_of_memory": "cuda"}                            with --device cuda, when CUDA ran out of memory
M counts what memsweep's estimate counts (src/estimate/model_counts.cpp):
every convolution's output (ReLU in place), every pooling's output, every
hidden layer's output and the logits; the input is not counted.

Exit status: 0 done; 2 bad input (a flag, a missing or malformed dataset
file, an events descriptor that is not open); 3 the training loss became NaN
or infinite; 4 CUDA ran out of memory (--device cuda; the events say so);
1 the events could not be written (or any other failure).
"""

import argparse
import gzip
import json
import math
import os
import sys
import time

try:
    import numpy as np
except ImportError as _error:  # e.g. run by another python3 than Debian's /usr/bin/python3
    print(f"torch_train.py: error: numpy cannot be imported by {sys.executable}: {_error}", file=sys.stderr)
    sys.exit(2)

PROG = "torch_train.py"
EXIT_BAD_INPUT = 2
EXIT_DIVERGED = 3
EXIT_CUDA_OUT_OF_MEMORY = 4

DATASETS = ("mnist", "fashion-mnist", "cifar-10", "synthetic")  # parse_dataset_name's spelling
MODELS = ("mlp", "cnn", "alexnet")
OPTIMIZERS = ("sgd", "momentum", "adam")
MEMORY_PLANS = ("keep", "reuse", "recompute")  # memory_plan.hpp's names
# model_spec.cpp: (out_channels, pool)
ALEXNET_BLOCKS = ((64, True), (192, True), (384, False), (256, False), (256, True))
KERNEL = 3
# -log(FLT_MIN): the largest loss of one example in loss.cpp.
MAX_EXAMPLE_LOSS = -math.log(float(np.finfo(np.float32).tiny))

MASK64 = (1 << 64) - 1


class InputError(Exception):
    """Bad input: exit 2 with the message."""


class EventsError(Exception):
    """The events could not be written: exit 1 with the message."""


# ---- memsweep's randomness (include/memsweep/random.hpp) -------------------


def stable_hash(text, basis=0xCBF29CE484222325):
    """64-bit FNV-1a of the UTF-8 bytes."""
    value = basis
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * 0x100000001B3) & MASK64
    return value


def mix_seed(seed, stream):
    """splitmix64's finaliser of seed + golden * (stream + 1)."""
    z = (seed + 0x9E3779B97F4A7C15 * (stream + 1)) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


class Mt19937_64:
    """std::mt19937_64, its state twisted with numpy 312 words at a time."""

    N, M = 312, 156
    _A = np.uint64(0xB5026F5AA96619E9)
    _UPPER = np.uint64(0xFFFFFFFF80000000)
    _LOWER = np.uint64(0x7FFFFFFF)
    _ONE = np.uint64(1)

    def __init__(self, seed):
        state = [seed & MASK64]
        for i in range(1, self.N):
            prev = state[-1]
            state.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64)
        self._state = np.array(state, dtype=np.uint64)
        self._buffer = np.empty(0, dtype=np.uint64)  # tempered outputs not yet handed out

    def _twist(self):
        mt, n, m = self._state, self.N, self.M
        a, upper, lower, one = self._A, self._UPPER, self._LOWER, self._ONE
        y = (mt[0 : n - m] & upper) | (mt[1 : n - m + 1] & lower)
        mt[0 : n - m] = mt[m:n] ^ (y >> one) ^ ((y & one) * a)
        y = (mt[n - m : n - 1] & upper) | (mt[n - m + 1 : n] & lower)
        mt[n - m : n - 1] = mt[0 : m - 1] ^ (y >> one) ^ ((y & one) * a)
        y = (mt[n - 1] & upper) | (mt[0] & lower)
        mt[n - 1] = mt[m - 1] ^ (y >> one) ^ ((y & one) * a)
        return mt.copy()

    @staticmethod
    def _temper(y):
        y ^= (y >> np.uint64(29)) & np.uint64(0x5555555555555555)
        y ^= (y << np.uint64(17)) & np.uint64(0x71D67FFFEDA60000)
        y ^= (y << np.uint64(37)) & np.uint64(0xFFF7EEE000000000)
        y ^= y >> np.uint64(43)
        return y

    def next(self, count):
        """The next `count` outputs, as uint64."""
        parts = [self._buffer]
        have = self._buffer.size
        while have < count:
            parts.append(self._twist())
            have += self.N
        if len(parts) > 1:
            fresh = self._temper(np.concatenate(parts[1:]))
            pool = np.concatenate([self._buffer, fresh])
        else:
            pool = self._buffer
        self._buffer = pool[count:]
        return pool[:count]


class Rng:
    """memsweep::Rng: mt19937_64 with memsweep's own mappings."""

    def __init__(self, seed):
        self.engine = Mt19937_64(seed)

    def next(self, count):
        return self.engine.next(count)

    @staticmethod
    def to_unit(draws):
        """uniform01(): 53 random bits in [0, 1)."""
        return (draws >> np.uint64(11)).astype(np.float64) * 2.0**-53

    def uniform01(self, count):
        return self.to_unit(self.next(count))

    def uniform_int(self, low, high):
        """One draw in [low, high] without modulo bias (rejection)."""
        span = high - low + 1
        limit = MASK64 - MASK64 % span
        while True:
            draw = int(self.next(1)[0])
            if draw < limit:
                return low + draw % span

    def normal(self, count):
        """`count` values of Rng::normal(): Box-Muller, second value dropped."""
        draws = self.next(2 * count)
        u1 = 1.0 - self.to_unit(draws[0::2])
        u2 = self.to_unit(draws[1::2])
        return np.sqrt(-2.0 * np.log(u1)) * np.cos((2.0 * math.pi) * u2)


def epoch_order(examples, seed, epoch_index):
    """BatchOrder::start_epoch(epoch_index): a Fisher-Yates shuffle of 0..n-1."""
    order = list(range(examples))
    if examples < 2:
        return order
    rng = Rng(mix_seed(seed, epoch_index))
    spans = np.arange(examples, 1, -1, dtype=np.uint64)  # i = n .. 2: j in [0, i - 1]
    draws = rng.next(spans.size)
    limits = np.uint64(MASK64) - np.uint64(MASK64) % spans
    if np.any(draws >= limits):  # a rejected draw (probability ~n/2^64): redo one at a time
        rng = Rng(mix_seed(seed, epoch_index))
        picks = [rng.uniform_int(0, i - 1) for i in range(examples, 1, -1)]
    else:
        picks = (draws % spans).tolist()
    for i, j in zip(range(examples, 1, -1), picks):
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


# ---- the synthetic dataset (src/dataset/synthetic.cpp) ----------------------

PROTOTYPE_STREAM, TRAIN_STREAM, TEST_STREAM = 0, 1, 2
SYNTHETIC_CHUNK_VALUES = 1 << 20  # pixels generated per step, to bound temporaries


def _ceil_half(values):
    return (values + 1) // 2


def _synthetic_split_fast(spec, prototypes, size, stream):
    """The split when no label draw is rejected, vectorised; None otherwise.

    The C++ loop draws, per example, its label (one output) and then its
    pixels' noise from one stream of normals, Box-Muller pairs (two outputs
    each, cos then sin) with the spare carried over to the next example. So
    example e's label is output e + 2 * ceil(e * P / 2), and normal k of the
    stream comes from pair k // 2, generated during example (2 * pair) // P.
    """
    pixels = spec["pixels"]
    classes = spec["classes"]
    noise = spec["noise"]
    rng = Rng(mix_seed(spec["seed"], stream))
    label_limit = np.uint64(MASK64 - MASK64 % classes)
    images = np.empty((size, pixels), dtype=np.float32)
    labels = np.empty(size, dtype=np.int32)
    chunk = max(1, SYNTHETIC_CHUNK_VALUES // pixels)
    carry = np.empty(0, dtype=np.float64)  # a normal left over from the last pair of the previous chunk
    for e0 in range(0, size, chunk):
        e1 = min(size, e0 + chunk)
        examples = np.arange(e0, e1, dtype=np.int64)
        if noise > 0.0:
            first_pair = _ceil_half(e0 * pixels)
            last_pair = _ceil_half(e1 * pixels)
            pairs = np.arange(first_pair, last_pair, dtype=np.int64)
            base = e0 + 2 * first_pair  # stream position of this chunk's first output
            draws = rng.next((e1 - e0) + 2 * (last_pair - first_pair))
            label_draws = draws[examples + 2 * _ceil_half(examples * pixels) - base]
            pair_example = (2 * pairs) // pixels
            u1_at = pair_example + 1 + 2 * pairs - base
            u1 = 1.0 - Rng.to_unit(draws[u1_at])
            u2 = Rng.to_unit(draws[u1_at + 1])
            radius = np.sqrt(-2.0 * np.log(u1))
            angle = (2.0 * math.pi) * u2
            normals = np.empty(2 * pairs.size, dtype=np.float64)
            normals[0::2] = radius * np.cos(angle)
            normals[1::2] = radius * np.sin(angle)
            del draws, u1, u2, radius, angle
            normals = np.concatenate([carry, normals])
            used = (e1 - e0) * pixels
            carry = normals[used:]
            noise_values = normals[:used].reshape(e1 - e0, pixels)
            noise_values *= noise
        else:
            label_draws = rng.next(e1 - e0)
            noise_values = 0.0
        if np.any(label_draws >= label_limit):
            return None
        chunk_labels = (label_draws % np.uint64(classes)).astype(np.int32)
        labels[e0:e1] = chunk_labels
        values = prototypes[chunk_labels].astype(np.float64) + noise_values
        np.clip(values, 0.0, 1.0, out=values)
        images[e0:e1] = values
    return images, labels


def _synthetic_split_slow(spec, prototypes, size, stream):
    """The C++ loop value by value: only when a label draw was rejected."""
    pixels, classes, noise = spec["pixels"], spec["classes"], spec["noise"]
    rng = Rng(mix_seed(spec["seed"], stream))
    images = np.empty((size, pixels), dtype=np.float32)
    labels = np.empty(size, dtype=np.int32)
    spare = None
    for example in range(size):
        label = rng.uniform_int(0, classes - 1)
        labels[example] = label
        for p in range(pixels):
            value = 0.0
            if noise > 0.0:
                if spare is not None:
                    normal, spare = spare, None
                else:
                    u1, u2 = Rng.to_unit(rng.next(2))
                    radius = math.sqrt(-2.0 * math.log(1.0 - u1))
                    angle = 2.0 * math.pi * u2
                    spare = radius * math.sin(angle)
                    normal = radius * math.cos(angle)
                value = noise * normal
            images[example, p] = min(max(float(prototypes[label, p]) + value, 0.0), 1.0)
    return images, labels


def generate_synthetic(spec, force_slow=False):
    """memsweep's generate_synthetic(): (train, test) as (images, labels) numpy arrays."""
    prototypes = Rng(mix_seed(spec["seed"], PROTOTYPE_STREAM)).uniform01(spec["classes"] * spec["pixels"])
    prototypes = prototypes.astype(np.float32).reshape(spec["classes"], spec["pixels"])
    splits = []
    for size, stream in ((spec["train_size"], TRAIN_STREAM), (spec["test_size"], TEST_STREAM)):
        split = None if force_slow else _synthetic_split_fast(spec, prototypes, size, stream)
        if split is None:
            split = _synthetic_split_slow(spec, prototypes, size, stream)
        splits.append(split)
    return splits


# ---- dataset files (src/dataset) --------------------------------------------

IDX_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
CIFAR_TEST = "test_batch.bin"
CIFAR_BATCHES = 5
CIFAR_SHAPE = (3, 32, 32)
CIFAR_RECORD = 1 + 3 * 32 * 32
MNIST_SHAPE = (1, 28, 28)
REAL_CLASSES = 10
PIXEL_TABLE = np.arange(256, dtype=np.float32) / np.float32(255.0)  # pixels.hpp: value / 255


def find_data_file(folder, name):
    """folder/name if it is a file, else folder/name.gz if that is, else None."""
    for candidate in (os.path.join(folder, name), os.path.join(folder, name + ".gz")):
        if os.path.isfile(candidate):
            return candidate
    return None


def read_file_bytes(path):
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                return f.read()
        with open(path, "rb") as f:
            return f.read()
    except (OSError, EOFError, gzip.BadGzipFile) as error:
        raise InputError(f"{path}: cannot be read: {error}") from None


def check_folder(folder, dataset):
    if not os.path.isdir(folder):
        what = "not a folder" if os.path.exists(folder) else "no such folder"
        raise InputError(f"--data-dir {folder}: {what} (it must hold the {dataset} files)")


def missing_files_error(folder, dataset, missing, subfolders):
    hint = ""
    for sub in subfolders:
        if os.path.isdir(os.path.join(folder, sub)):
            hint = f"; --data-dir must be the folder holding the files: did you mean {os.path.join(folder, sub)}?"
            break
    names = ", ".join(f"{name}[.gz]" for name in missing)
    return InputError(f"--data-dir {folder}: {dataset} files missing: {names}{hint}")


def _big_endian_u32(data, offset):
    return int.from_bytes(data[offset : offset + 4], "big")


def parse_idx_labels(data, name):
    if len(data) < 8:
        raise InputError(f"{name}: too short for an IDX labels header: expected 8 bytes, found {len(data)}")
    magic = _big_endian_u32(data, 0)
    if magic != 0x00000801:
        raise InputError(f"{name}: wrong magic number for IDX labels: expected 0x00000801, found 0x{magic:08X}")
    count = _big_endian_u32(data, 4)
    if len(data) != 8 + count:
        raise InputError(f"{name}: expected {8 + count} bytes for {count} labels, found {len(data)}")
    labels = np.frombuffer(data, dtype=np.uint8, offset=8)
    if labels.size and int(labels.max()) >= REAL_CLASSES:
        bad = int(np.argmax(labels >= REAL_CLASSES))
        raise InputError(f"{name}: index {bad}: label {labels[bad]} is out of range, allowed 0..{REAL_CLASSES - 1}")
    return labels.astype(np.int32)


def parse_idx_images(data, name, shape):
    if len(data) < 16:
        raise InputError(f"{name}: too short for an IDX images header: expected 16 bytes, found {len(data)}")
    magic = _big_endian_u32(data, 0)
    if magic != 0x00000803:
        raise InputError(f"{name}: wrong magic number for IDX images: expected 0x00000803, found 0x{magic:08X}")
    count, rows, columns = (_big_endian_u32(data, offset) for offset in (4, 8, 12))
    if (rows, columns) != shape[1:]:
        raise InputError(f"{name}: images are {rows}x{columns}, expected {shape[1]}x{shape[2]}")
    expected = 16 + count * rows * columns
    if len(data) != expected:
        raise InputError(f"{name}: expected {expected} bytes for {count} images of {rows}x{columns}, found {len(data)}")
    if count == 0:
        raise InputError(f"{name} holds no images")
    pixels = np.frombuffer(data, dtype=np.uint8, offset=16)
    return PIXEL_TABLE[pixels].reshape(count, *shape), count


def load_idx(folder, dataset):
    check_folder(folder, dataset)
    paths = [find_data_file(folder, name) for name in IDX_FILES]
    missing = [name for name, path in zip(IDX_FILES, paths) if path is None]
    if missing:
        raise missing_files_error(folder, dataset, missing, [dataset])
    splits = []
    for images_path, labels_path in ((paths[0], paths[1]), (paths[2], paths[3])):
        # Labels first, like load.cpp: the image bytes live only with their floats.
        labels = parse_idx_labels(read_file_bytes(labels_path), labels_path)
        images, count = parse_idx_images(read_file_bytes(images_path), images_path, MNIST_SHAPE)
        if count != labels.size:
            raise InputError(
                f"{images_path} holds {count} images but {labels_path} holds {labels.size} labels: "
                "they must match one to one"
            )
        splits.append((images, labels))
    return splits


def parse_cifar(paths):
    batches = []
    total = 0
    for path in paths:
        data = read_file_bytes(path)
        if not data:
            raise InputError(f"{path}: empty file, expected CIFAR-10 records")
        if len(data) % CIFAR_RECORD:
            raise InputError(
                f"{path}: {len(data)} bytes is not a whole number of CIFAR-10 records ({CIFAR_RECORD} bytes each)"
            )
        records = np.frombuffer(data, dtype=np.uint8).reshape(-1, CIFAR_RECORD)
        if int(records[:, 0].max()) >= REAL_CLASSES:
            bad = int(np.argmax(records[:, 0] >= REAL_CLASSES))
            raise InputError(f"{path}: record {bad}: label {records[bad, 0]} is out of range, allowed 0..9")
        batches.append(records)
        total += records.shape[0]
    images = np.empty((total, *CIFAR_SHAPE), dtype=np.float32)
    labels = np.empty(total, dtype=np.int32)
    row = 0
    while batches:
        records = batches.pop(0)  # freed once unpacked, like make_cifar_split
        n = records.shape[0]
        labels[row : row + n] = records[:, 0]
        images[row : row + n] = PIXEL_TABLE[records[:, 1:]].reshape(n, *CIFAR_SHAPE)
        row += n
        del records
    return images, labels


def load_cifar(folder):
    check_folder(folder, "cifar-10")
    first = find_data_file(folder, "data_batch_1.bin")
    test = find_data_file(folder, CIFAR_TEST)
    missing = [name for name, path in (("data_batch_1.bin", first), (CIFAR_TEST, test)) if path is None]
    if missing:
        raise missing_files_error(folder, "cifar-10", missing, ["cifar-10", "cifar-10-batches-bin"])
    train_paths = [first]
    number = 2
    while number <= CIFAR_BATCHES:
        path = find_data_file(folder, f"data_batch_{number}.bin")
        if path is None:
            break
        train_paths.append(path)
        number += 1
    for later in range(number + 1, CIFAR_BATCHES + 1):
        stray = find_data_file(folder, f"data_batch_{later}.bin")
        if stray is not None:
            raise InputError(
                f"{folder}: CIFAR-10 training batches must be consecutive from data_batch_1.bin: "
                f"found {os.path.basename(stray)} but not data_batch_{number}.bin[.gz]"
            )
    return [parse_cifar(train_paths), parse_cifar([test])]


def load_dataset(args):
    """((train_images, train_labels), (test_images, test_labels)), NCHW float32 and int32 numpy arrays."""
    if args.dataset == "synthetic":
        c, h, w = args.synthetic_shape
        spec = {
            "pixels": c * h * w,
            "classes": args.synthetic_classes,
            "train_size": args.synthetic_train_size,
            "test_size": args.synthetic_test_size,
            "noise": args.synthetic_noise,
            "seed": args.synthetic_seed,
        }
        splits = generate_synthetic(spec)
        return [(images.reshape(-1, c, h, w), labels) for images, labels in splits]
    if not args.data_dir:
        raise InputError(f"--data-dir is required for --dataset {args.dataset}")
    if args.dataset == "cifar-10":
        return load_cifar(args.data_dir)
    return load_idx(args.data_dir, args.dataset)


# ---- the network (model_spec.hpp, plan.cpp) ----------------------------------


def input_shape(args):
    if args.dataset == "synthetic":
        return tuple(args.synthetic_shape)
    return CIFAR_SHAPE if args.dataset == "cifar-10" else MNIST_SHAPE


def class_count(args):
    return args.synthetic_classes if args.dataset == "synthetic" else REAL_CLASSES


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


def make_optimizer(torch, args, parameters):
    if args.optimizer == "sgd":
        return torch.optim.SGD(parameters, lr=args.learning_rate)
    if args.optimizer == "momentum":
        return torch.optim.SGD(parameters, lr=args.learning_rate, momentum=args.momentum, dampening=0.0)
    return torch.optim.Adam(
        parameters, lr=args.learning_rate, betas=(args.beta1, args.beta2), eps=args.epsilon, weight_decay=0.0
    )


# ---- events -----------------------------------------------------------------


class Events:
    """Progress lines for memsweep on MEMSWEEP_EVENTS_FD, or nothing."""

    def __init__(self, target):
        self._file = None
        if target is None or target == "":
            return
        try:
            fd = int(target)
        except ValueError:
            fd = None
        try:
            if fd is not None:
                self._file = os.fdopen(fd, "w", encoding="utf-8")
            else:
                self._file = open(target, "a", encoding="utf-8")
        except OSError as error:
            what = "file descriptor" if fd is not None else "file"
            raise InputError(f"MEMSWEEP_EVENTS_FD={target}: cannot open the {what}: {error.strerror}") from None

    def emit(self, **fields):
        if self._file is None:
            return
        try:
            self._file.write(json.dumps(fields, allow_nan=False) + "\n")
            self._file.flush()
        except OSError as error:  # e.g. the reading end closed
            raise EventsError(f"writing to MEMSWEEP_EVENTS_FD failed: {error.strerror or error}") from None

    def close(self):
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError:  # what emit() could not write, close() cannot either; emit() said so
                pass


# ---- the command line ---------------------------------------------------------


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


# ---- training -----------------------------------------------------------------


class Splits:
    """Both splits, indexed by (split, example indices): a batch as a fresh tensor, like memsweep's copy
    into its batch buffer. With --workers a DataLoader calls this in its worker processes."""

    def __init__(self, train_x, train_y, test_x, test_y):
        self.splits = {"train": (train_x, train_y), "test": (test_x, test_y)}

    def __len__(self):
        return sum(labels.shape[0] for _, labels in self.splits.values())

    def __getitem__(self, key):
        import torch

        split, indices = key
        images, labels = self.splits[split]
        index = torch.as_tensor(indices, dtype=torch.int64)
        return images.index_select(0, index), labels.index_select(0, index)


class Schedule:
    """The batches of the current phase as (split, indices): an epoch's shuffled order of the training
    split (BatchOrder), or the test split in order. One object for both phases, so that one DataLoader
    (one pool of --workers processes) serves both."""

    def __init__(self, n_train, n_test, batch, seed):
        self.n_train, self.n_test, self.batch, self.seed = n_train, n_test, batch, seed
        self.split, self.epoch_index = "train", 0

    def start(self, split, epoch_index=0):
        self.split, self.epoch_index = split, epoch_index

    def __len__(self):
        examples = self.n_train if self.split == "train" else self.n_test
        return (examples + self.batch - 1) // self.batch

    def __iter__(self):
        if self.split == "train":
            order = epoch_order(self.n_train, self.seed, self.epoch_index)
        else:
            order = list(range(self.n_test))
        for start in range(0, len(order), self.batch):
            yield self.split, order[start : start + self.batch]


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
    layers = "-".join(
        [f"{shape[0]}x{shape[1]}x{shape[2]}" if blocks else str(shape[0] * shape[1] * shape[2])]
        + [f"c{out}{'p' if pool else ''}" for out, pool in blocks]
        + [str(width) for width in args.hidden]
        + [str(classes)]
    )
    print(f"{PROG}: {args.dataset} {args.model} {layers}, {parameters} parameters, {n_train} train / {n_test} test "
          f"examples, {args.optimizer} lr={args.learning_rate} batch={batch} threads={args.threads} "
          f"workers={args.workers} device={args.device}{checkpointing}", flush=True)

    schedule = Schedule(n_train, n_test, batch, args.seed)
    if args.workers > 0:
        loader = torch.utils.data.DataLoader(data, sampler=schedule, batch_size=None, num_workers=args.workers,
                                             persistent_workers=True)
        cpu_batches = lambda: iter(loader)  # noqa: E731
    else:
        cpu_batches = lambda: (data[key] for key in schedule)  # noqa: E731
    if args.device == "cpu":
        batches = cpu_batches
    else:
        batches = lambda: ((x.to(device), y.to(device)) for x, y in cpu_batches())  # noqa: E731

    try:
        return train_epochs(args, events, torch, F, model, optimizer, schedule, batches, n_train, n_test, device)
    except RuntimeError as error:
        # torch.cuda.OutOfMemoryError (1.13+) is a RuntimeError; older versions raise a bare one.
        if args.device != "cuda" or "out of memory" not in str(error):
            raise
        events.emit(out_of_memory="cuda")
        print(f"{PROG}: CUDA ran out of memory: {str(error).splitlines()[0]}", file=sys.stderr, flush=True)
        return EXIT_CUDA_OUT_OF_MEMORY


def emit_gpu_peaks(events, torch, device):
    """PyTorch's own view of the device's memory, beside NVML's (memsweep's gpu_peak)."""
    if device.type != "cuda":
        return
    index = torch.cuda.current_device() if device.index is None else device.index
    events.emit(gpu={"device": index, "allocated_peak": int(torch.cuda.max_memory_allocated(index)),
                     "reserved_peak": int(torch.cuda.max_memory_reserved(index))})


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
