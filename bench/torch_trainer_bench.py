#!/usr/bin/python3
"""PyTorch baseline for the memsweep trainer benchmark (bench/run-trainer-bench.sh).

Times full training steps (zero_grad, forward, softmax cross-entropy, backward,
optimizer step) of an MLP or a small CNN on a fixed synthetic batch on the CPU
and prints ONE JSON line. build/bench/memsweep_bench_trainer takes the same
flags and prints the same JSON line with "framework": "memsweep".

Run with Debian's interpreter (/usr/bin/python3, python3-torch). Which BLAS
torch uses is decided by the dynamic loader (libtorch_cpu.so NEEDs the generic
libblas.so.3); run-trainer-bench.sh switches it to OpenBLAS with
LD_LIBRARY_PATH. The "blas" field reports the library that actually provides
sgemm_ to libtorch_cpu in this process.

Example:
  /usr/bin/python3 bench/torch_trainer_bench.py --arch mlp --input 784 \
      --hidden 285,389,423,173,61 --classes 10 --batch 8 --threads 1
"""

import argparse
import json
import os
import statistics
import sys
import time


def int_list(text):
    text = text.strip()
    if not text:
        return []
    return [int(v) for v in text.replace("x", ",").split(",") if v.strip()]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--input", type=int_list, default=None,
                   help="input shape C,H,W (or a single size for an MLP), e.g. 784, 1,28,28, 3,32,32")
    p.add_argument("--input-size", type=int, default=None,
                   help="flat input size (MLP); same as --input N")
    p.add_argument("--hidden", type=int_list, default=None,
                   help="hidden layer widths, e.g. 285,389,423,173,61 (MLP default 512,256; CNN default 128)")
    p.add_argument("--channels", type=int_list, default=[32, 64],
                   help="CNN conv block channels (conv3x3 s1 p1 -> ReLU -> maxpool2x2 each), default 32,64")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--optimizer", choices=["sgd", "momentum", "adam"], default="sgd")
    p.add_argument("--lr", type=float, default=None, help="default 0.01 (sgd, momentum), 0.001 (adam)")
    p.add_argument("--momentum", type=float, default=0.9, help="for --optimizer momentum")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup-steps", type=int, default=20)
    p.add_argument("--steps", type=int, default=200, help="timed steps per repeat")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tag", default=None, help="free text copied into the JSON line (e.g. the BLAS variant)")
    a = p.parse_args(argv)

    if a.input is None:
        a.input = [a.input_size] if a.input_size is not None else ([784] if a.arch == "mlp" else [3, 32, 32])
    elif a.input_size is not None and a.input_size != prod(a.input):
        p.error("--input and --input-size disagree")
    if a.arch == "cnn" and len(a.input) != 3:
        p.error("--arch cnn needs --input C,H,W")
    if a.hidden is None:
        a.hidden = [512, 256] if a.arch == "mlp" else [128]
    if a.lr is None:
        a.lr = 0.001 if a.optimizer == "adam" else 0.01
    for name in ("batch", "threads", "steps", "repeats", "classes"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be >= 1")
    if a.warmup_steps < 0:
        p.error("--warmup-steps must be >= 0")
    return a


def prod(values):
    r = 1
    for v in values:
        r *= v
    return r


def arch_string(a):
    if a.arch == "mlp":
        return "-".join(str(v) for v in [prod(a.input)] + a.hidden + [a.classes])
    c, h, w = a.input
    return "cnn {}x{}x{} c{} h{}".format(c, h, w, "-".join(map(str, a.channels)),
                                         "-".join(map(str, a.hidden)) if a.hidden else "none")


# --- BLAS detection ------------------------------------------------------------

BLAS_NAME_KEYS = ("libblas", "libopenblas", "libcblas", "libblis", "libatlas", "libsatlas",
                  "libtatlas", "mkl", "libflexiblas", "libnvpl_blas")


def mapped_blas_libraries():
    """Real paths of BLAS-family shared objects mapped into this process."""
    found = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                path = parts[5].strip()
                base = os.path.basename(path).lower()
                if path.startswith("/") and any(k in base for k in BLAS_NAME_KEYS):
                    if path not in found:
                        found.append(path)
    except OSError:
        pass
    return found


def sgemm_provider(torch_module):
    """Path of the shared object that defines the sgemm_ libtorch_cpu binds to.

    dlsym on libtorch_cpu's handle searches it and its dependencies in load
    order, which is the lookup the dynamic loader used for libtorch_cpu's own
    sgemm_ reference; dladdr turns the address back into a file name.
    """
    import ctypes
    import ctypes.util

    class DlInfo(ctypes.Structure):
        _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                    ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]

    lib_dir = os.path.join(os.path.dirname(torch_module.__file__), "lib")
    candidates = [os.path.join(lib_dir, "libtorch_cpu.so")]
    candidates += [p for p in _mapped_paths() if os.path.basename(p).startswith("libtorch_cpu.so")]
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]
    for cand in candidates:
        if not os.path.exists(cand):
            continue
        try:
            handle = ctypes.CDLL(cand, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            addr = ctypes.cast(handle.sgemm_, ctypes.c_void_p).value
        except (OSError, AttributeError):
            continue
        info = DlInfo()
        if addr and libc.dladdr(ctypes.c_void_p(addr), ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(info.dli_fname.decode())
    return None


def _mapped_paths():
    out = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].startswith("/"):
                    p = parts[5].strip()
                    if p not in out:
                        out.append(p)
    except OSError:
        pass
    return out


def blas_kind(path, mapped):
    names = " ".join([path or ""] + mapped).lower()
    p = (path or "").lower()
    if "openblas" in p:
        return "openblas"
    if "mkl" in p:
        return "mkl"
    if "blis" in p:
        return "blis"
    if "atlas" in p:
        return "atlas"
    if "flexiblas" in p:
        return "flexiblas"
    if "/blas/libblas" in p:  # Debian's libblas3 (netlib reference) alternative
        return "reference"
    if "openblas" in names:
        return "openblas"
    return "unknown" if path is None else "other"


def blas_config(torch_module):
    cfg = torch_module.__config__.show()
    keep = []
    for key in ("BLAS_INFO", "LAPACK_INFO", "USE_MKLDNN", "USE_OPENMP"):
        i = cfg.find(key + "=")
        if i >= 0:
            keep.append(cfg[i:].split(",", 1)[0].strip())
    return ", ".join(keep)


# --- benchmark -------------------------------------------------------------------

def build_model(nn, a):
    layers = []
    if a.arch == "mlp":
        layers.append(nn.Flatten())
        width = prod(a.input)
    else:
        c, h, w = a.input
        for ch in a.channels:
            layers += [nn.Conv2d(c, ch, kernel_size=3, stride=1, padding=1), nn.ReLU(),
                       nn.MaxPool2d(kernel_size=2, stride=2)]
            c, h, w = ch, h // 2, w // 2
        layers.append(nn.Flatten())
        width = c * h * w
    for hid in a.hidden:
        layers += [nn.Linear(width, hid), nn.ReLU()]
        width = hid
    layers.append(nn.Linear(width, a.classes))
    return nn.Sequential(*layers)


def main(argv):
    a = parse_args(argv)

    # Thread counts for every runtime that may read them at load time; must be
    # set before torch (libgomp, OpenBLAS) is loaded.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
        os.environ[var] = str(a.threads)

    import torch
    from torch import nn

    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(a.seed)

    model = build_model(nn, a).to(torch.float32)
    model.train()
    x = torch.randn([a.batch] + list(a.input), dtype=torch.float32)
    y = torch.randint(0, a.classes, (a.batch,), dtype=torch.int64)
    loss_fn = nn.CrossEntropyLoss()
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    elif a.optimizer == "momentum":
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=a.lr)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    load_start = os.getloadavg()[0]
    loss = None
    for _ in range(a.warmup_steps):
        loss = step()

    per_repeat = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        for _ in range(a.steps):
            loss = step()
        dt = time.perf_counter() - t0
        per_repeat.append(a.batch * a.steps / dt)

    sps = statistics.median(per_repeat)
    mapped = mapped_blas_libraries()
    provider = sgemm_provider(torch)
    blas_path = provider or (mapped[0] if mapped else None)
    record = {
        "framework": "torch",
        "version": torch.__version__,
        "blas": blas_path,
        "blas_kind": blas_kind(blas_path, mapped),
        "blas_mapped": mapped,
        "blas_config": blas_config(torch),
        "threads": a.threads,
        "torch_threads": torch.get_num_threads(),
        "arch": arch_string(a),
        "arch_kind": a.arch,
        "input": a.input,
        "classes": a.classes,
        "batch": a.batch,
        "optimizer": a.optimizer,
        "lr": a.lr,
        "warmup_steps": a.warmup_steps,
        "steps": a.steps,
        "samples_per_sec": round(sps, 2),
        "ms_per_step": round(1000.0 * a.batch / sps, 4),
        "repeats": [round(v, 2) for v in per_repeat],
        "final_loss": None if loss is None else round(float(loss), 6),
        # 1-minute load average before and after: other processes on the
        # machine (compiles...) make the figures noisy, 2-thread ones most.
        "loadavg": [round(load_start, 2), round(os.getloadavg()[0], 2)],
    }
    if a.tag is not None:
        record["tag"] = a.tag
    print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
