"""The batches of an epoch: memsweep's batch order (src/dataset/batches.cpp), and the tensors fed to
the model, gathered in this process or by a torch DataLoader's workers."""

import numpy as np

from .rng import MASK64, Rng, mix_seed


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


def batch_source(torch, data, schedule, workers, device):
    """A function that gives the current phase's batches, (images, labels) on `device`. One DataLoader for
    both phases (the schedule switches them), so --workers starts its pool of processes once."""
    if workers > 0:
        loader = torch.utils.data.DataLoader(data, sampler=schedule, batch_size=None, num_workers=workers,
                                             persistent_workers=True)
        cpu_batches = lambda: iter(loader)  # noqa: E731
    else:
        cpu_batches = lambda: (data[key] for key in schedule)  # noqa: E731
    if device.type == "cpu":
        return cpu_batches
    return lambda: ((x.to(device), y.to(device)) for x, y in cpu_batches())
