"""The events protocol: progress lines for memsweep on MEMSWEEP_EVENTS_FD.

When MEMSWEEP_EVENTS_FD is set (a descriptor number, or else a path
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
"""

import json
import os

from .errors import InputError


class EventsError(Exception):
    """The events could not be written: exit 1 with the message."""


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


def emit_gpu_peaks(events, torch, device):
    """PyTorch's own view of the device's memory, beside NVML's (memsweep's gpu_peak)."""
    if device.type != "cuda":
        return
    index = torch.cuda.current_device() if device.index is None else device.index
    events.emit(gpu={"device": index, "allocated_peak": int(torch.cuda.max_memory_allocated(index)),
                     "reserved_peak": int(torch.cuda.max_memory_reserved(index))})
