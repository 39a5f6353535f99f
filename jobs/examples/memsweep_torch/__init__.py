"""What makes jobs/examples/torch_train.py train as memsweep's own trainer does, value for value.

One module per job: rng (memsweep's mt19937_64 and its distributions), datasets (the IDX and CIFAR-10
readers, the synthetic generator), batches (the batch order, the batches as tensors), models (the
networks, their initial weights, checkpointing), events (the MEMSWEEP_EVENTS_FD lines), cli (the flags),
errors (exit statuses). Only numpy is needed to import it; torch is passed in or imported when training.

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
    with numpy (rng.py).
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
"""
