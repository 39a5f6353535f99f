"""The datasets as memsweep loads or generates them (src/dataset), as numpy arrays."""

import gzip
import math
import os

import numpy as np

from .errors import InputError
from .rng import MASK64, Rng, mix_seed

DATASETS = ("mnist", "fashion-mnist", "cifar-10", "synthetic")  # parse_dataset_name's spelling


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


def input_shape(args):
    if args.dataset == "synthetic":
        return tuple(args.synthetic_shape)
    return CIFAR_SHAPE if args.dataset == "cifar-10" else MNIST_SHAPE


def class_count(args):
    return args.synthetic_classes if args.dataset == "synthetic" else REAL_CLASSES
