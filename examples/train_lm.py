"""Does HOT train a transformer? A small character-level language model trained on the Python
standard library's own source files (text every machine with Python has), twice per seed from the
same initial weights and the same batch order: once exact (nn.Linear, nn.MultiheadAttention),
once converted by hot.torch.convert (every linear map of the model, attention projections
included, with hot's backward; HLA runs along the 128+ characters of each sequence). Prints the
validation loss every few steps for both, a table per seed (final validation loss, time per
step, bytes autograd keeps for the backward), writes a PNG of the curves (when matplotlib is
installed) and a JSON of everything.

    HOT_LIBRARY=build/runtime/libhot.so PYTHONPATH=python python3 examples/train_lm.py
    ... examples/train_lm.py --seeds 0,1,2          # the table of docs/python.md
    ... examples/train_lm.py --device cuda          # tensors on the GPU, hot's CUDA backend

Outputs go to build/examples/train_lm/ (--out-dir). Needs torch; matplotlib for the plot.
"""

import argparse
import copy
import glob
import json
import math
import os
import sys
import sysconfig
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python"))  # the repository's package, if not installed


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=120, help="training steps (default 120)")
    p.add_argument("--batch", type=int, default=8, help="sequences per batch (default 8)")
    p.add_argument("--seq", type=int, default=128, help="characters per sequence (default 128)")
    p.add_argument("--d-model", type=int, default=128, help="model width (default 128)")
    p.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    p.add_argument("--layers", type=int, default=2, help="transformer layers (default 2)")
    p.add_argument("--lr", type=float, default=2e-3, help="AdamW peak learning rate")
    p.add_argument("--eval-every", type=int, default=10, help="steps between validations")
    p.add_argument("--eval-batches", type=int, default=8, help="validation batches (fixed)")
    p.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    p.add_argument("--text-mb", type=float, default=4.0,
                   help="MB of standard-library source to read (default 4)")
    p.add_argument("--recipe", default="hot", choices=["hot", "paper", "paper_code"])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's)")
    p.add_argument("--out-dir", default=os.path.join(REPO, "build", "examples", "train_lm"),
                   help="where the PNG and JSON go (default build/examples/train_lm)")
    return p.parse_args()


def load_text(limit_bytes):
    """The .py files of the standard library (sorted paths, so every machine with the same
    Python reads the same bytes), concatenated up to limit_bytes."""
    root = sysconfig.get_paths()["stdlib"]
    files = sorted(f for f in glob.glob(os.path.join(root, "**", "*.py"), recursive=True)
                   if "site-packages" not in f and "test" not in os.path.relpath(f, root))
    out, n = [], 0
    for f in files:
        try:
            with open(f, "rb") as fh:
                b = fh.read()
        except OSError:
            continue
        out.append(b)
        n += len(b)
        if n >= limit_bytes:
            break
    return b"".join(out)[:limit_bytes], root, len(out)


def build_model(args, torch, nn):
    class CharLM(nn.Module):
        def __init__(self):
            super().__init__()
            d = args.d_model
            self.tok = nn.Embedding(256, d)
            self.pos = nn.Embedding(args.seq, d)
            layer = nn.TransformerEncoderLayer(d, args.heads, 4 * d, dropout=0.0,
                                               batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, args.layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, 256)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(args.seq),
                                 persistent=False)

        def forward(self, idx):
            L = idx.shape[1]
            h = self.tok(idx) + self.pos(torch.arange(L, device=idx.device))
            h = self.blocks(h, mask=self.mask[:L, :L], is_causal=True)
            return self.head(self.norm(h))

    return CharLM()


def saved_bytes_of(torch, params, fn):
    """Runs fn() and returns the bytes of the distinct tensors autograd keeps for the backward
    (parameters excluded): the activation memory of one training step."""
    seen = {}
    pids = {p.data_ptr() for p in params}

    def pack(t):
        if t.data_ptr() not in pids:
            seen[(t.data_ptr(), t.dtype, tuple(t.shape))] = t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, sum(seen.values())


def run_seed(args, seed, data, n_train, dev):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    import hot.torch as ht

    torch.manual_seed(seed)
    base = build_model(args, torch, nn)
    exact = copy.deepcopy(base).to(dev)
    hot_model, report = ht.convert(copy.deepcopy(base), recipe=args.recipe, return_report=True)
    hot_model = hot_model.to(dev)
    models = {"exact": exact, "hot": hot_model}
    opts = {k: torch.optim.AdamW(m.parameters(), lr=args.lr, weight_decay=0.01)
            for k, m in models.items()}
    warm = max(1, args.steps // 10)

    def lr_at(step):
        if step < warm:
            return args.lr * (step + 1) / warm
        t = (step - warm) / max(1, args.steps - warm)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))

    g = torch.Generator().manual_seed(10_000 + seed)
    L = args.seq
    train_starts = torch.randint(0, n_train - L - 1, (args.steps, args.batch), generator=g)
    n_val = len(data) - n_train
    vg = torch.Generator().manual_seed(99)  # the same validation text for every seed
    val_starts = torch.randint(n_train, n_train + n_val - L - 1,
                               (args.eval_batches, args.batch), generator=vg)

    def batch(starts):
        idx = torch.stack([data[s:s + L + 1] for s in starts.tolist()]).to(dev)
        return idx[:, :-1], idx[:, 1:]

    def val_loss(m):
        m.eval()
        with torch.no_grad():
            tot = 0.0
            for starts in val_starts:
                x, y = batch(starts)
                tot += float(F.cross_entropy(m(x).reshape(-1, 256), y.reshape(-1)))
        m.train()
        return tot / len(val_starts)

    hist = {k: {"step": [], "val_loss": []} for k in models}
    times = {k: 0.0 for k in models}
    saved = {}
    train_loss = {k: [] for k in models}
    for step in range(args.steps + 1):
        if step % args.eval_every == 0 or step == args.steps:
            for k, m in models.items():
                hist[k]["step"].append(step)
                hist[k]["val_loss"].append(val_loss(m))
            e, h = hist["exact"]["val_loss"][-1], hist["hot"]["val_loss"][-1]
            print(f"  seed {seed} step {step:4d}: validation loss exact {e:.4f}  HOT {h:.4f} "
                  f"({100 * (h - e) / e:+.2f} %)", flush=True)
        if step == args.steps:
            break
        x, y = batch(train_starts[step])
        for k, m in models.items():
            for grp in opts[k].param_groups:
                grp["lr"] = lr_at(step)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()

            def fwd():
                return F.cross_entropy(m(x).reshape(-1, 256), y.reshape(-1))
            if step == 0:
                loss, saved[k] = saved_bytes_of(torch, list(m.parameters()), fwd)
            else:
                loss = fwd()
            opts[k].zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opts[k].step()
            if dev.type == "cuda":
                torch.cuda.synchronize()
            if step > 0:  # step 0 holds the first calls' setup (layers, calibration)
                times[k] += time.perf_counter() - t0
            train_loss[k].append(float(loss.detach()))
    n_timed = max(1, args.steps - 1)
    return {"seed": seed, "history": hist, "train_loss": train_loss,
            "ms_per_step": {k: 1000 * v / n_timed for k, v in times.items()},
            "saved_bytes": saved, "report": str(report)}


def main():
    args = parse_args()
    import torch

    import hot
    import hot.torch as ht

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("train_lm.py: --device cuda but torch sees no CUDA device")
    dev = torch.device(args.device)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    text, root, nfiles = load_text(int(args.text_mb * 1e6))
    data = torch.frombuffer(bytearray(text), dtype=torch.uint8).long()
    n_train = int(0.9 * len(data))
    print(f"text: {len(text)} bytes of {nfiles} .py files under {root} (90 % train, 10 % "
          f"validation); model: {args.layers} x TransformerEncoderLayer(d={args.d_model}, "
          f"{args.heads} heads, ff {4 * args.d_model}, pre-norm, causal), byte vocabulary 256; "
          f"batch {args.batch} x {args.seq}, AdamW lr {args.lr} (warm-up, cosine), {args.steps} "
          f"steps, device {dev}, recipe {args.recipe}, libhot {hot.library_path()}", flush=True)
    results = []
    t0 = time.time()
    for seed in seeds:
        r = run_seed(args, seed, data, n_train, dev)
        if seed == seeds[0]:
            print(r["report"])
        results.append(r)
    wall = time.time() - t0
    st = ht.context_for(dev).stats()
    print(f"\nhot: backend {st.backend}, {st.saves} saves, {st.backwards} backwards, "
          f"{st.calibrations} calibrations; {wall:.0f} s in all")
    print(f"\n| seed | exact: val loss | HOT: val loss | HOT vs exact | exact ms/step | "
          f"HOT ms/step | saved bytes exact | saved bytes HOT |")
    print("|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for r in results:
        e = r["history"]["exact"]["val_loss"][-1]
        h = r["history"]["hot"]["val_loss"][-1]
        worst = max(worst, (h - e) / e)
        print(f"| {r['seed']} | {e:.4f} | {h:.4f} | {100 * (h - e) / e:+.2f} % | "
              f"{r['ms_per_step']['exact']:.0f} | {r['ms_per_step']['hot']:.0f} | "
              f"{r['saved_bytes']['exact'] / 2**20:.2f} MiB | "
              f"{r['saved_bytes']['hot'] / 2**20:.2f} MiB |")
    verdict = "within" if worst <= 0.05 else "NOT within"
    print(f"\nHOT's final validation loss is {verdict} 5 % of exact's on every seed (worst "
          f"{100 * worst:+.2f} %) after {args.steps} steps")
    os.makedirs(args.out_dir, exist_ok=True)
    js = os.path.join(args.out_dir, "train_lm.json")
    with open(js, "w") as f:
        json.dump({"args": vars(args), "results": results, "wall_s": wall}, f, indent=1)
    print(f"json: {js}")
    try:
        import matplotlib
    except ImportError:
        print("plot: skipped, matplotlib is not installed (tools/install-python-deps.sh --demo)")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for i, r in enumerate(results):
        c = f"C{i}"
        for k, style, label in (("exact", "-", "nn.Linear/MHA (exact)"), ("hot", "--", "HOT")):
            hh = r["history"][k]
            a1.plot(hh["step"], hh["val_loss"], style, color=c, label=f"seed {r['seed']} {label}")
        e, h = r["history"]["exact"]["val_loss"], r["history"]["hot"]["val_loss"]
        a2.plot(r["history"]["hot"]["step"], [100 * (b - a) / a for a, b in zip(e, h)], "-",
                color=c, label=f"seed {r['seed']}")
    a1.set_xlabel("step")
    a1.set_ylabel("validation cross-entropy (nats/char)")
    a1.set_title(f"char LM, {args.layers} layers d={args.d_model}, seq {args.seq}")
    a1.legend(fontsize=7)
    a2.axhline(5, color="grey", lw=0.8, ls=":")
    a2.axhline(-5, color="grey", lw=0.8, ls=":")
    a2.set_xlabel("step")
    a2.set_ylabel("HOT vs exact validation loss (%)")
    a2.set_title("relative difference (goal: within 5 %)")
    a2.legend(fontsize=7)
    fig.tight_layout()
    png = os.path.join(args.out_dir, "train_lm.png")
    fig.savefig(png, dpi=100)
    print(f"plot: {png}")


if __name__ == "__main__":
    main()
