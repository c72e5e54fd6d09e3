"""Does HOT train? An MLP on scikit-learn's handwritten digits (8x8 images, 10 classes; the data
set ships inside the scikit-learn package), trained twice from the same initial weights and the
same batch order: once with torch.nn.Linear (exact backward), once with hot.torch.HOTLinear
(hot's backward: HQ 4-bit g_x, HLA INT8 g_w, ABC-compressed activations). Prints loss and
accuracy per epoch for both and writes a PNG of both loss curves.

    python3 examples/train.py        # hot: the installed package, else this checkout's + build/
    (writes build/examples/train_digits.png; --out PATH elsewhere)
    ... examples/train.py --device cuda          # hot's CUDA backend on a GPU

Needs torch, scikit-learn, matplotlib (tools/install-python-deps.sh --demo).
"""

import argparse
import copy
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import hot_import  # noqa: E402  the installed hot, else this checkout's (says which)

REPO = os.path.dirname(HERE)
hot_import.pick(REPO)
NUM = hot_import.numbers(REPO)  # the one parser of numbers (python/hot/_numbers.py)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=NUM.arg_int(1, 10**6),
                   default=30, help="training epochs (default 30)")
    p.add_argument("--batch", type=NUM.arg_int(1, 1 << 16),
                   default=64, help="batch size = HLA token axis (default 64)")
    p.add_argument("--hidden", type=NUM.arg_int(1, 1 << 16),
                   default=256, help="hidden width of the MLP (default 256)")
    p.add_argument("--lr", type=NUM.arg_float(0, 10),
                   default=1e-3, help="Adam learning rate (default 1e-3)")
    p.add_argument("--seed", type=NUM.arg_int(0, 2**32 - 1),
                   default=0, help="seed of the weights, split and batch order")
    p.add_argument("--recipe", default="hot", choices=["hot", "paper", "paper_code"],
                   help="hot recipe of the HOTLinear layers (default hot)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="cpu: hot's CPU backend; cuda: tensors on the GPU, hot's CUDA backend")
    p.add_argument("--out", default=os.path.join(HERE, "..", "build", "examples",
                                                 "train_digits.png"),
                   help="PNG of the loss curves (default build/examples/train_digits.png; "
                        "docs/train_digits.png is the published one: --out it on purpose)")
    p.add_argument("--json", default=None, help="also write the per-epoch figures as JSON here")
    args = p.parse_args()
    for opt, path in (("--out", args.out), ("--json", args.json)):
        why = path is not None and hot_import.output_problem(path)
        if why:
            p.error(f"{opt} {path}: {why}")
    return args


def load_data(args, dev):
    """The digits, split 80/20 (stratified by the seed), standardized by the training images."""
    import numpy as np
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    X = digits.data.astype(np.float32)
    y = digits.target.astype(np.int64)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=args.seed,
                                          stratify=y)
    mean, std = Xtr.mean(0), Xtr.std(0)
    std[std < 1e-3] = 1.0  # pixels that are always blank in the training images
    Xtr, Xte = (Xtr - mean) / std, (Xte - mean) / std
    Xtr, Xte = torch.from_numpy(Xtr).to(dev), torch.from_numpy(Xte).to(dev)
    ytr, yte = torch.from_numpy(ytr).to(dev), torch.from_numpy(yte).to(dev)
    return Xtr, Xte, ytr, yte


def train(args, models, data, dev):
    """Trains every model on the same batches, one epoch at a time; returns the history."""
    import torch
    import torch.nn.functional as F

    Xtr, Xte, ytr, yte = data
    opts = {k: torch.optim.Adam(m.parameters(), lr=args.lr) for k, m in models.items()}

    def evaluate(m):
        with torch.no_grad():
            out = m(Xte)
            return float(F.cross_entropy(out, yte)), float((out.argmax(1) == yte).float().mean())

    hist = {k: {"train_loss": [], "test_loss": [], "test_acc": []} for k in models}
    n = len(Xtr)
    print(f"{'epoch':>5} | {'exact: train loss':>17} {'test loss':>9} {'test acc':>8} | "
          f"{'HOT: train loss':>15} {'test loss':>9} {'test acc':>8}")
    for epoch in range(1, args.epochs + 1):
        g = torch.Generator().manual_seed(args.seed * 1000 + epoch)
        order = torch.randperm(n, generator=g).to(dev)  # the same batches for both models
        for k, m in models.items():
            m.train()
            total = 0.0
            for s in range(0, n, args.batch):
                idx = order[s:s + args.batch]
                loss = F.cross_entropy(m(Xtr[idx]), ytr[idx])
                opts[k].zero_grad()
                loss.backward()
                opts[k].step()
                total += loss.detach().item() * len(idx)
            m.eval()
            tl, ta = evaluate(m)
            hist[k]["train_loss"].append(total / n)
            hist[k]["test_loss"].append(tl)
            hist[k]["test_acc"].append(ta)
        e, h = hist["exact"], hist["hot"]
        print(f"{epoch:5d} | {e['train_loss'][-1]:17.4f} {e['test_loss'][-1]:9.4f} "
              f"{100 * e['test_acc'][-1]:7.2f}% | {h['train_loss'][-1]:15.4f} "
              f"{h['test_loss'][-1]:9.4f} {100 * h['test_acc'][-1]:7.2f}%")
    return hist


def report(models, hist, wall, dev):
    """Prints the final accuracies, hot's counters and every HOT layer's choice and bytes."""
    import hot
    import hot.torch as ht

    st = ht.context_for(dev).stats()
    fe, fh = hist["exact"]["test_acc"][-1], hist["hot"]["test_acc"][-1]
    print(f"final test accuracy: exact {100 * fe:.2f}%, HOT {100 * fh:.2f}% "
          f"(difference {100 * (fh - fe):+.2f} points); {wall:.1f} s for both")
    print(f"hot: backend {st.backend}, {st.saves} saves, {st.backwards} backwards, "
          f"{st.calibrations} calibrations")
    for name, mod in models["hot"].named_modules():
        if isinstance(mod, ht.HOTLinear):
            for layer in mod.hot_layers():
                i = layer.info()
                print(f"  layer {name}: T={i.T} O={i.O} I={i.I}, g' per "
                      f"{'token' if i.gran == hot.Gran.ROW else i.gran.name.lower()} (LQS), saved "
                      f"{i.saved_bytes} bytes vs fp32 x {i.fp32_bytes} ({i.saved_bytes / i.fp32_bytes:.3f})")


def plot(args, hist):
    """Loss and test accuracy per epoch for both models, into args.out."""
    from hot.files import replace_file
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fe, fh = hist["exact"]["test_acc"][-1], hist["hot"]["test_acc"][-1]
    ep = list(range(1, args.epochs + 1))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for k, label, color in (("exact", "nn.Linear (exact)", "C0"), ("hot", "HOTLinear", "C1")):
        a1.plot(ep, hist[k]["train_loss"], "-", color=color, label=f"{label} train")
        a1.plot(ep, hist[k]["test_loss"], ":", color=color, label=f"{label} test")
        a2.plot(ep, [100 * v for v in hist[k]["test_acc"]], "-", color=color, label=label)
    a1.set_xlabel("epoch")
    a1.set_ylabel("cross-entropy loss")
    a1.set_yscale("log")
    a1.legend()
    a1.set_title("digits MLP: loss")
    a2.set_xlabel("epoch")
    a2.set_ylabel("test accuracy (%)")
    a2.legend()
    a2.set_title(f"final: exact {100 * fe:.2f}%, HOT {100 * fh:.2f}%")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    replace_file(args.out, lambda tmp: fig.savefig(tmp, dpi=100))
    print(f"plot: {args.out}")


def main():
    args = parse_args()
    import torch
    import torch.nn as nn

    import hot
    import hot.torch as ht
    from hot.files import replace_text

    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("train.py: --device cuda but torch sees no CUDA device")
    dev = torch.device(args.device)
    torch.manual_seed(args.seed)
    data = load_data(args, dev)

    base = nn.Sequential(nn.Linear(64, args.hidden), nn.ReLU(),
                         nn.Linear(args.hidden, args.hidden), nn.ReLU(),
                         nn.Linear(args.hidden, 10))
    models = {"exact": copy.deepcopy(base).to(dev),
              "hot": ht.convert(copy.deepcopy(base), recipe=args.recipe).to(dev)}
    print(f"digits: {len(data[0])} train / {len(data[1])} test images, MLP 64-{args.hidden}-"
          f"{args.hidden}-10, batch {args.batch}, Adam lr {args.lr}, {args.epochs} epochs, "
          f"device {dev}, hot recipe {args.recipe}, libhot {hot.library_path()}")
    t0 = time.time()
    hist = train(args, models, data, dev)
    wall = time.time() - t0
    report(models, hist, wall, dev)
    plot(args, hist)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        replace_text(args.json, json.dumps({"args": vars(args), "history": hist,
                                            "wall_s": wall}, indent=1))


if __name__ == "__main__":
    main()
