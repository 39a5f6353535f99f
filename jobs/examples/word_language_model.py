"""A small stand-in for pytorch/examples word_language_model (main.py, model.py): an LSTM or a Transformer
language model trained with truncated backpropagation through time, with the example's own flags
(--model, --emsize, --nhid, --nlayers, --lr, --clip, --epochs, --batch_size, --bptt, --dropout, --nhead,
--seed, --log-interval), on random tokens instead of a corpus (--vocab, --train-tokens, --valid-tokens), so
that it needs no download and a trial takes seconds. It writes no events lines and prints the example's
progress and end-of-epoch lines ("| end of epoch   1 | time: … | valid loss  7.61 | valid ppl  2019.45").

Memory grows with --bptt × --batch_size (every step keeps bptt × batch activations and vocab-sized logits
for its backward pass) and with --emsize, as in the example. Used by the analysis tests
(analysis/tests/test_program_sweep.py) as a real program sweep without a dataset label.

    /usr/bin/python3 jobs/examples/word_language_model.py --model LSTM --bptt 35 --batch_size 20
"""

import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="word_language_model on random tokens")
    parser.add_argument("--model", default="LSTM", choices=["RNN_TANH", "RNN_RELU", "LSTM", "GRU", "Transformer"])
    parser.add_argument("--emsize", type=int, default=200, help="size of word embeddings")
    parser.add_argument("--nhid", type=int, default=200, help="hidden units per layer")
    parser.add_argument("--nlayers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=20.0)
    parser.add_argument("--clip", type=float, default=0.25)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch_size", type=int, default=20)
    parser.add_argument("--bptt", type=int, default=35, help="sequence length")
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--nhead", type=int, default=2, help="heads of the Transformer's attention")
    parser.add_argument("--seed", type=int, default=1111)
    parser.add_argument("--log-interval", type=int, default=200)
    parser.add_argument("--vocab", type=int, default=2000, help="tokens in the random vocabulary")
    parser.add_argument("--train-tokens", type=int, default=20000)
    parser.add_argument("--valid-tokens", type=int, default=4000)
    parser.add_argument("--threads", type=int, default=1)
    return parser.parse_args(argv)


class RNNModel(nn.Module):
    """Encoder, recurrent module, decoder (the example's model.RNNModel)."""

    def __init__(self, kind, ntoken, ninp, nhid, nlayers, dropout):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if kind in ("LSTM", "GRU"):
            self.rnn = getattr(nn, kind)(ninp, nhid, nlayers, dropout=dropout)
        else:
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=kind[4:].lower(), dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.kind, self.nhid, self.nlayers = kind, nhid, nlayers

    def forward(self, source, hidden):
        output, hidden = self.rnn(self.drop(self.encoder(source)), hidden)
        return F.log_softmax(self.decoder(self.drop(output)), dim=-1), hidden

    def init_hidden(self, batch):
        zeros = torch.zeros(self.nlayers, batch, self.nhid)
        return (zeros, zeros.clone()) if self.kind == "LSTM" else zeros


class TransformerModel(nn.Module):
    """Embedding, sinusoidal positions, a causal Transformer encoder, decoder (the example's TransformerModel)."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout):
        super().__init__()
        self.kind = "Transformer"
        self.encoder = nn.Embedding(ntoken, ninp)
        layer = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.transformer = nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.decoder = nn.Linear(ninp, ntoken)
        self.ninp = ninp

    def positions(self, length):
        position = torch.arange(length).unsqueeze(1)
        scale = torch.exp(torch.arange(0, self.ninp, 2) * (-math.log(10000.0) / self.ninp))
        table = torch.zeros(length, 1, self.ninp)
        table[:, 0, 0::2] = torch.sin(position * scale)
        table[:, 0, 1::2] = torch.cos(position * scale[: self.ninp // 2])
        return table

    def forward(self, source, hidden=None):
        length = source.size(0)
        mask = torch.triu(torch.full((length, length), float("-inf")), diagonal=1)
        embedded = self.encoder(source) * math.sqrt(self.ninp) + self.positions(length)
        return F.log_softmax(self.decoder(self.transformer(embedded, mask)), dim=-1), None


def batchify(data, batch):
    """The token stream as `batch` columns (the example's batchify)."""
    rows = data.size(0) // batch
    return data[: rows * batch].view(batch, -1).t().contiguous()


def get_batch(source, i, bptt):
    length = min(bptt, len(source) - 1 - i)
    return source[i:i + length], source[i + 1:i + 1 + length].reshape(-1)


def detached(hidden):
    if hidden is None:
        return None
    return tuple(h.detach() for h in hidden) if isinstance(hidden, tuple) else hidden.detach()


def evaluate(model, source, args):
    model.eval()
    total = 0.0
    hidden = None if model.kind == "Transformer" else model.init_hidden(source.size(1))
    with torch.no_grad():
        for i in range(0, source.size(0) - 1, args.bptt):
            data, targets = get_batch(source, i, args.bptt)
            output, hidden = model(data, hidden)
            total += len(data) * F.nll_loss(output.view(-1, output.size(-1)), targets).item()
    return total / (len(source) - 1)


def train_epoch(model, source, args, epoch, lr):
    model.train()
    hidden = None if model.kind == "Transformer" else model.init_hidden(args.batch_size)
    started, total = time.time(), 0.0
    for batch, i in enumerate(range(0, source.size(0) - 1, args.bptt)):
        data, targets = get_batch(source, i, args.bptt)
        model.zero_grad()
        hidden = detached(hidden)
        output, hidden = model(data, hidden)
        loss = F.nll_loss(output.view(-1, output.size(-1)), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-lr)
        total += loss.item()
        if (batch + 1) % args.log_interval == 0:
            mean = total / args.log_interval
            print(f"| epoch {epoch:3d} | {batch + 1:5d} batches | lr {lr:02.2f} | "
                  f"ms/batch {(time.time() - started) * 1000 / args.log_interval:5.2f} | "
                  f"loss {mean:5.2f} | ppl {math.exp(mean):8.2f}", flush=True)
            started, total = time.time(), 0.0


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(args.threads, 1))
    generator = torch.Generator().manual_seed(args.seed)
    train = batchify(torch.randint(args.vocab, (args.train_tokens,), generator=generator), args.batch_size)
    valid = batchify(torch.randint(args.vocab, (args.valid_tokens,), generator=generator), 10)
    if args.model == "Transformer":
        model = TransformerModel(args.vocab, args.emsize, args.nhead, args.nhid, args.nlayers, args.dropout)
    else:
        model = RNNModel(args.model, args.vocab, args.emsize, args.nhid, args.nlayers, args.dropout)
    lr = args.lr
    for epoch in range(1, args.epochs + 1):
        started = time.time()
        train_epoch(model, train, args, epoch, lr)
        loss = evaluate(model, valid, args)
        print("-" * 89)
        print(f"| end of epoch {epoch:3d} | time: {time.time() - started:5.2f}s | valid loss {loss:5.2f} | "
              f"valid ppl {math.exp(loss):8.2f}")
        print("-" * 89, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
