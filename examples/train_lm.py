"""Does HOT train a transformer? A small character-level language model trained on the Python
standard library's own source files (text every machine with Python has), twice per seed from the
same initial weights and the same batch order: once exact (nn.Linear, nn.MultiheadAttention),
once converted by hot.torch.convert (recipe hot: HQ 4-bit g_x with LQS, HLA INT8 g_w along the
characters of each sequence, ABC) with what convert(model) does by default: every linear map
converted (the attention projections and the output head included) and HLA's basis chosen per
module by measurement (hla_basis="auto": the recipe's rank cut only while its g_w error stays
<= hot.memory.BASIS_MAX_ERROR, measured again as the model trains; a character's gradient is
not smooth along the sequence, so the modules take the full Walsh basis here; docs/python.md
has the ablation). Trains exact fp32, exact under bf16 autocast and HOT side by side; prints
the validation loss every few steps for each, a table per seed (final validation loss, time per step, bytes autograd keeps for the backward), writes a
PNG of the curves (when matplotlib is installed) and a JSON of everything.

    python3 examples/train_lm.py     # hot: the installed package, else this checkout's + build/
    ... examples/train_lm.py --seeds 0,1,2          # the table of docs/python.md
    ... examples/train_lm.py --hla-basis spec       # the recipe's rank cut as it is
    ... examples/train_lm.py --ablate               # per layer kind / technique / HLA basis
    ... examples/train_lm.py --device cuda          # tensors on the GPU, hot's CUDA backend

Outputs go to build/examples/train_lm/ (--out-dir). Needs torch; matplotlib for the plot.
"""

import argparse
import contextlib
import copy
import glob
import json
import math
import os
import re
import sys
import sysconfig
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import hot_import  # noqa: E402  the installed hot, else this checkout's (says which)

hot_import.pick(REPO)
NUM = hot_import.numbers(REPO)  # the one parser of numbers (python/hot/_numbers.py)


KINDS = ("in_proj", "out_proj", "linear1", "linear2", "head")
DEFAULT_EXACT = "none"
DEFAULT_SELECTION = "recipe"

# The built-in ablation list (--ablate): each line the HOT options of one variant, applied on top
# of the command line's. "off" runs hot's backward with that technique disabled: HQ off = the
# fp32 product g_y·w for g_x, HLA off = the fp32 product g_yᵀ·x for g_w (x kept in fp32, so ABC
# off too); "--exact K" keeps the modules of kind K nn.Linear / nn.MultiheadAttention (an
# attention module's in_proj or out_proj alone: hot's backward with HQ, HLA and ABC disabled).
ABLATIONS = {"all": """
--exact none                                  # every linear map HOT (recipe hot)
--exact in_proj                               # one kind kept exact ...
--exact out_proj
--exact linear1
--exact linear2
--exact head
--exact in_proj,out_proj,linear1,linear2      # ... or only one kind HOT
--exact out_proj,linear1,linear2,head
--exact in_proj,linear1,linear2,head
--exact in_proj,out_proj,linear2,head
--exact in_proj,out_proj,linear1,head
--exact none --hq off                         # one technique off everywhere
--exact none --hla off
--exact none --abc off
--exact none --hla-selection full             # HLA without the rank cut (8-bit g^, x^ kept)
--exact none --hla-selection prefix --hla-rank 48
--exact none --hla-block 16
--exact none --hla-block 128
--exact head --hla off
--exact head --hq off
--exact head --hla-selection full
--exact none --recipe paper
""", "short": """
--exact none --hla-selection tri              # the recipe as it is, every linear map HOT
--exact head --hla-selection tri              # the output head kept exact
--exact none --hla-selection full             # no rank cut
--exact head --hla-selection full             # both
"""}


def add_hot_options(p, exact=None, selection=None, basis="auto"):
    """The options that choose what is converted and how (also the language of --ablate, whose
    variants start from the recipe as it is: exact="none", selection="recipe", basis="spec")."""
    exact = DEFAULT_EXACT if exact is None else exact
    selection = DEFAULT_SELECTION if selection is None else selection
    p.add_argument("--hla-basis", default=basis, choices=["auto", "spec"],
                   help="convert's hla_basis: auto (each module keeps HLA's rank cut only when "
                        "its g_w error measured at the first backward is small, else the full "
                        "basis; convert's default) or spec (the basis as given) "
                        f"(default {basis})")
    p.add_argument("--activations", default="on", choices=["on", "off"],
                   help="convert's activations: ReLU/GELU before a converted linear map become "
                        "HOTReLU/HOTGELU (default on)")
    p.add_argument("--recipe", default="hot", choices=["hot", "paper", "paper_code"],
                   help="hot's recipe of the converted layers (default hot)")
    p.add_argument("--exact", default=exact, metavar="KINDS",
                   help="comma-separated kinds of linear maps kept exact (not converted): "
                        f"{', '.join(KINDS)}, or none (default {exact})")
    for part, what in (("hq", "HQ (4-bit g_x)"), ("hla", "HLA (low-rank INT8 g_w)"),
                       ("abc", "ABC (x kept as HLA's int8 codes)")):
        p.add_argument(f"--{part}", default="on", choices=["on", "off"],
                       help=f"{what} in the converted layers (default on)")
    p.add_argument("--hla-block", type=NUM.arg_int(0, 1 << 20), default=0, metavar="P",
                   help="HLA block p along the sequence (0: the recipe's, 64)")
    p.add_argument("--hla-selection", default=selection,
                   choices=["recipe", "tri", "prefix", "full"],
                   help="HLA basis along the sequence: tri (the recipe's: keep percentage), "
                        "prefix (the --hla-rank lowest sequencies), full (no rank cut: INT8 "
                        f"g_w and x codes of every Walsh component) (default {selection})")
    p.add_argument("--hla-keep", type=NUM.arg_int(0, 50), default=0, metavar="PCT",
                   help="tri keep percentage 1..50 (0: the recipe's, 50)")
    p.add_argument("--hla-rank", type=NUM.arg_int(0, 1 << 20), default=0, metavar="R",
                   help="prefix rank (with --hla-selection prefix)")


def hot_config_parser():
    p = argparse.ArgumentParser(prog="--ablate variant", add_help=False, exit_on_error=False)
    add_hot_options(p, exact="none", selection="recipe", basis="spec")
    return p


def hot_dtypes(args):
    """[(model key, dtype)] of the HOT models one seed trains beside the exact ones: "hot" under
    bf16 autocast (or in fp32 with --hot-dtype fp32), and "hot_fp32" too with both."""
    if args.hot_dtype == "both":
        return [("hot", "bf16"), ("hot_fp32", "fp32")]
    return [("hot", args.hot_dtype)]


HOT_NAMES = {"bf16": "HOT (bf16 autocast)", "fp32": "HOT (fp32)"}


def hot_variants(args):
    """[(label, namespace of HOT options)]: the command line's, or each --ablate variant
    parsed on top of them."""
    if args.ablate is None:
        return [("hot", args)]
    if args.ablate in ABLATIONS:
        text = ABLATIONS[args.ablate]
    else:
        try:
            with open(args.ablate) as f:
                text = f.read()
        except OSError as e:
            sys.exit(f"train_lm.py: --ablate {args.ablate}: not a list ({', '.join(ABLATIONS)}) "
                     f"and not a readable file ({e.strerror})")
    parser = hot_config_parser()
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            # a line starts from the recipe as it is (the command line's --recipe)
            ns, extra = parser.parse_known_args(["--recipe", args.recipe] + line.split())
            if extra:
                raise argparse.ArgumentError(None, f"unknown {' '.join(extra)}")
        except argparse.ArgumentError as e:
            sys.exit(f"train_lm.py: --ablate {args.ablate}: line {lineno}: bad variant "
                     f"{line!r}: {e}")
        out.append((line, ns))
    if not out:
        sys.exit(f"train_lm.py: --ablate {args.ablate}: no variant")
    return out


def exact_kinds(cfg):
    kinds = {k.strip() for k in cfg.exact.split(",")}
    if kinds == {"none"}:
        return set()
    if "none" in kinds:
        sys.exit(f"train_lm.py: --exact {cfg.exact}: none goes alone")
    bad = kinds - set(KINDS)
    if bad:
        sys.exit(f"train_lm.py: --exact {cfg.exact}: unknown kind "
                 f"{', '.join(repr(k) for k in sorted(bad))} (kinds: {', '.join(KINDS)}, none)")
    return kinds


def check_config(cfg, args, where):
    """Exits with one line naming the option when cfg's HOT options are not a valid layer
    (hot plans a layer of the model's width and sequence to find out)."""
    import hot
    import hot.torch as ht
    import torch
    exact_kinds(cfg)
    if cfg.hla_rank and cfg.hla_selection != "prefix":
        sys.exit(f"train_lm.py: {where}: --hla-rank needs --hla-selection prefix")
    if cfg.hla_keep and cfg.hla_selection not in ("tri", "recipe"):
        sys.exit(f"train_lm.py: {where}: --hla-keep needs --hla-selection tri")
    spec = layer_spec(hot, cfg)
    spec.c.in_features = spec.c.out_features = args.d_model
    try:
        ht.context_for(torch.device("cpu")).create_layer(spec=spec, batch=args.batch,
                                                         tokens=args.seq)
    except hot.HotError as e:
        sys.exit(f"train_lm.py: {where}: the HOT options make no valid layer: {e}")


def kind_of(name):
    """The kind of a module by its qualified name (self_attn: the attention module)."""
    last = name.rpartition(".")[2]
    return last if last in ("self_attn", "linear1", "linear2", "head") else None


def layer_spec(hot, cfg, exact=False):
    """The hot.LayerSpec of the converted layers (sizes from each module); exact=True: hot's
    backward with HQ, HLA and ABC disabled (fp32 products, x kept)."""
    s = hot.LayerSpec(0, 0, recipe=cfg.recipe)
    c = s.c
    c.hq.enabled = 0 if (exact or cfg.hq == "off") else 1
    c.hla.enabled = 0 if (exact or cfg.hla == "off") else 1
    c.abc.enabled = 0 if (exact or cfg.abc == "off" or cfg.hla == "off") else 1
    if cfg.hla_block:
        c.hla.block = cfg.hla_block
    if cfg.hla_selection != "recipe":
        c.hla.selection = int(getattr(hot.Selection, cfg.hla_selection.upper()))
    if cfg.hla_keep:
        c.hla.keep = cfg.hla_keep
    if cfg.hla_rank:
        c.hla.rank = cfg.hla_rank
    return s


def convert_model(model, cfg):
    """hot.torch.convert(model) with the HOT options of cfg: the kinds of --exact refused by
    convert's include= (an attention module whose in_proj or out_proj alone is exact is made
    by HOTMultiheadAttention.from_mha first, the exact one with hot's backward disabled);
    returns (model, report)."""
    import hot
    import hot.torch as ht
    exact = exact_kinds(cfg)
    spec = layer_spec(hot, cfg)
    if len(exact & {"in_proj", "out_proj"}) == 1:
        off = layer_spec(hot, cfg, exact=True)
        for n, m in list(model.named_modules()):
            if kind_of(n) == "self_attn":
                new = ht.HOTMultiheadAttention.from_mha(
                    m, spec=off if "out_proj" in exact else spec,
                    in_proj_spec=off if "in_proj" in exact else spec, recipe=cfg.recipe, tag=n)
                parent, _, child = n.rpartition(".")
                setattr(model.get_submodule(parent), child, new)

    def include(name, m):
        k = kind_of(name)
        if k == "self_attn":
            return not {"in_proj", "out_proj"} <= exact
        return k not in exact
    return ht.convert(model, spec=spec, recipe=cfg.recipe, include=include, return_report=True,
                      hla_basis=cfg.hla_basis, activations=cfg.activations == "on")


def describe(cfg):
    """One line: what cfg converts and how."""
    ex = sorted(exact_kinds(cfg), key=KINDS.index)
    parts = [f"recipe {cfg.recipe}", f"exact: {', '.join(ex) if ex else 'none'}"]
    for part in ("hq", "hla", "abc"):
        if getattr(cfg, part) == "off":
            parts.append(f"{part.upper()} off")
    for opt in ("hla_block", "hla_keep", "hla_rank"):
        if getattr(cfg, opt):
            parts.append(f"{opt.replace('_', '.', 1)} {getattr(cfg, opt)}")
    if cfg.hla_selection != "recipe":
        parts.append(f"hla.selection {cfg.hla_selection}")
    parts.append(f"hla_basis {cfg.hla_basis}")
    if cfg.activations == "off":
        parts.append("activations off")
    return ", ".join(parts)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=NUM.arg_int(1, 10**9),
                   default=120, help="training steps (default 120)")
    p.add_argument("--batch", type=NUM.arg_int(1, 1 << 16),
                   default=8, help="sequences per batch (default 8)")
    p.add_argument("--seq", type=NUM.arg_int(1, 1 << 20),
                   default=128, help="characters per sequence (default 128)")
    p.add_argument("--d-model", type=NUM.arg_int(1, 1 << 16),
                   default=128, help="model width (default 128)")
    p.add_argument("--heads", type=NUM.arg_int(1, 1 << 10),
                   default=4, help="attention heads (default 4)")
    p.add_argument("--layers", type=NUM.arg_int(1, 1 << 10),
                   default=2, help="transformer layers (default 2)")
    p.add_argument("--model", default="gelu", choices=["gelu", "relu"],
                   help="the feed-forward activation of the transformer layers (default gelu)")
    p.add_argument("--hot-dtype", default="both", choices=["both", "bf16", "fp32"],
                   help="HOT trains under bf16 autocast, in fp32, or both side by side (default: "
                        "both, each against both exact runs: which dtype is faster depends on "
                        "the CPU and the width; --ablate trains its variants under bf16 "
                        "autocast unless this says fp32)")
    p.add_argument("--lr", type=NUM.arg_float(0, 10), default=2e-3, help="AdamW peak learning rate")
    p.add_argument("--eval-every", type=NUM.arg_int(1, 10**9),
                   default=10, help="steps between validations")
    p.add_argument("--eval-batches", type=NUM.arg_int(1, 10**6),
                   default=8, help="validation batches (fixed)")
    p.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    p.add_argument("--text-mb", type=NUM.arg_float(0.001, 1e6), default=4.0,
                   help="MB of standard-library source to read (default 4)")
    add_hot_options(p)
    p.add_argument("--ablate", nargs="?", const="all", default=None, metavar="LIST",
                   help="train the exact model once per seed and, next to it, every HOT "
                        "variant of LIST: 'all' (the default: per layer kind, per technique, "
                        "HLA's basis), 'short' (the recipe vs the head kept exact vs no rank "
                        "cut) or a file, one variant a line written in the HOT options above "
                        "(e.g. '--exact head --hla off'; # starts a comment); each starts from "
                        "the recipe as it is (every linear map HOT, the recipe's basis; "
                        "--recipe applies); prints a table, one "
                        "row per variant, and writes train_lm_ablation.json")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--threads", type=NUM.arg_int(0, 1 << 10),
                   default=0, help="CPU threads of torch and of hot's CPU backend, which "
                   "follows torch's count (0: torch's default)")
    p.add_argument("--profile", type=NUM.arg_int(0, 10**6), default=0, metavar="STEPS",
                   help="after the first seed's training, run STEPS more steps of each model "
                        "under torch.profiler and print where a step's time goes: the operators "
                        "with the most time on the calling thread per step (HOT's linear "
                        "layers are _HOTLinearFunction forward and backward; on a GPU also "
                        "the operators with the most kernel time; 0: off, default)")
    p.add_argument("--out-dir", default=os.path.join(REPO, "build", "examples", "train_lm"),
                   help="where the PNG and JSON go (default build/examples/train_lm)")
    args = p.parse_args()
    if args.d_model % args.heads:
        p.error(f"--d-model {args.d_model} is not a multiple of --heads {args.heads}")
    why = hot_import.output_problem(args.out_dir, folder=True)
    if why:
        p.error(f"--out-dir {args.out_dir}: {why}")
    return args


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
                                               batch_first=True, norm_first=True,
                                               activation=args.model)
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


def build_models(args, base, variants, dev):
    """The models of one seed, all copies of base: exact fp32, exact under bf16 autocast, and
    the HOT ones (the command line's in each dtype asked, or one per --ablate variant); with
    each one's autocast flag and each HOT one's convert() report."""
    models = {"exact": copy.deepcopy(base).to(dev), "bf16": copy.deepcopy(base).to(dev)}
    autocast = {"exact": False, "bf16": True}
    reports = {}
    if args.ablate is None:  # the command line's HOT model, in each dtype asked
        for key, dtype in hot_dtypes(args):
            m, reports[key] = convert_model(copy.deepcopy(base), variants[0][1])
            models[key] = m.to(dev)
            autocast[key] = dtype == "bf16"
    else:
        for label, cfg in variants:
            m, reports[label] = convert_model(copy.deepcopy(base), cfg)
            models[label] = m.to(dev)
            autocast[label] = args.hot_dtype != "fp32"
    return models, autocast, reports


def print_validation(args, seed, step, hist):
    """One line of the latest validation losses: exact fp32 and bf16, then each HOT model's (or
    each --ablate variant's, relative to exact fp32)."""
    e = hist["exact"]["val_loss"][-1]
    b = hist["bf16"]["val_loss"][-1]
    if args.ablate is None:
        rel = "  ".join(f"HOT {dtype} {hist[k]['val_loss'][-1]:.4f} "
                        f"({100 * (hist[k]['val_loss'][-1] - e) / e:+.2f} %)"
                        for k, dtype in hot_dtypes(args))
    else:  # --ablate: the variants in their order
        rel = "variants " + " ".join(f"{100 * (hist[k]['val_loss'][-1] - e) / e:+.1f}"
                                     for k in hist if k not in ("exact", "bf16")) + " %"
    print(f"  seed {seed} step {step:4d}: validation loss exact fp32 {e:.4f}  exact "
          f"bf16 {b:.4f}  {rel}", flush=True)


def run_seed(args, seed, data, n_train, dev, variants, profile=False):
    """Trains the exact model and one HOT model per variant [(label, cfg)] from the same
    initial weights on the same batches; returns the histories, times and saved bytes."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    import hot.memory as hm

    torch.manual_seed(seed)
    base = build_model(args, torch, nn)
    # exact fp32, exact under bf16 autocast, and the HOT models (bf16 autocast unless
    # --hot-dtype fp32); all from the same initial weights
    models, autocast, reports = build_models(args, base, variants, dev)
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

    def val_loss(m, ac):
        m.eval()
        with torch.no_grad():
            tot = 0.0
            for starts in val_starts:
                x, y = batch(starts)
                with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=ac):
                    out = m(x)
                tot += float(F.cross_entropy(out.float().reshape(-1, 256), y.reshape(-1)))
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
                hist[k]["val_loss"].append(val_loss(m, autocast[k]))
            print_validation(args, seed, step, hist)
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
                with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=autocast[k]):
                    out = m(x)
                return F.cross_entropy(out.float().reshape(-1, 256), y.reshape(-1))
            # saved activations by distinct storage (hot.memory), at step 1: step 0 is the
            # step where HOT modules measure their HLA basis (they keep x for it)
            if step == 1 or (step == 0 and args.steps == 1):
                loss, saved[k] = hm.saved_bytes(fwd, exclude=m.parameters())
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
    if profile:  # --profile, after the first seed's training
        profile_steps(args, models, autocast, opts, lambda: batch(train_starts[-1]), dev)
    n_timed = max(1, args.steps - 1)
    return {"seed": seed, "history": hist, "train_loss": train_loss,
            "ms_per_step": {k: 1000 * v / n_timed for k, v in times.items()},
            "saved_bytes": saved, "report": {k: str(r) for k, r in reports.items()},
            "variants": {label: describe(cfg) for label, cfg in variants}}


PROFILE_TOP = 8  # operators printed per model by --profile
# the lines torch's profiler library writes to stderr at every start and stop (and, on a
# machine without a GPU, that it found none): left out of --profile's output, the rest kept
PROFILER_NOISE = re.compile(r"^(USDT|STAGE|INFO):|gpuGetDeviceCount failed")


@contextlib.contextmanager
def quiet_profiler_log():
    """Runs the block with file descriptor 2 in a temporary file, then writes its lines back to
    stderr without the profiler library's own (PROFILER_NOISE)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            for line in tmp.read().decode(errors="replace").splitlines():
                if not PROFILER_NOISE.search(line):
                    print(line, file=sys.stderr)


def _device_self_us(e):
    """An operator's self time on the GPU, microseconds (torch renamed the field in 2.4)."""
    v = getattr(e, "self_device_time_total", None)
    return getattr(e, "self_cuda_time_total", 0.0) if v is None else v


def profile_steps(args, models, autocast, opts, next_batch, dev):
    """--profile: args.profile training steps of each model under torch.profiler (CPU
    activity, and CUDA's on a GPU), after the training whose figures are reported; prints per
    model its time per step and the PROFILE_TOP operators with the most self time on the
    calling thread per step (wall time there: an operator that runs on several threads counts
    its wall time once); on a GPU also those with the most self time on the device, and the
    steps are timed from a synchronised start to a synchronised end (kernels run after the
    calls that launch them)."""
    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile

    names = {"exact": "exact fp32", "bf16": "exact bf16"}
    if args.ablate is None:
        names.update((k, f"HOT {dtype}") for k, dtype in hot_dtypes(args))
    x, y = next_batch()
    print(f"\nwhere a step's time goes (--profile {args.profile}: torch.profiler, self time on "
          f"the calling thread, ms per step; forward, backward and AdamW)")
    for k, m in models.items():
        def step():
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=autocast[k]):
                out = m(x)
            loss = F.cross_entropy(out.float().reshape(-1, 256), y.reshape(-1))
            opts[k].zero_grad(set_to_none=True)
            loss.backward()
            opts[k].step()
        step()  # warm
        gpu = dev.type == "cuda"
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
        if gpu:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with quiet_profiler_log():
            with profile(activities=acts) as prof:
                for _ in range(args.profile):
                    step()
                if gpu:
                    torch.cuda.synchronize()
        wall = 1e3 * (time.perf_counter() - t0) / args.profile
        ops = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
        tot = sum(e.self_cpu_time_total for e in ops) / 1e3 / args.profile
        top = ops[:PROFILE_TOP]
        rest = tot - sum(e.self_cpu_time_total for e in top) / 1e3 / args.profile
        print(f"  {names.get(k, k)}: {wall:.2f} ms a step under the profiler, {tot:.2f} in "
              f"operators")
        for e in top:
            print(f"    {e.self_cpu_time_total / 1e3 / args.profile:7.2f}  {e.key}")
        print(f"    {rest:7.2f}  the other operators", flush=True)
        if gpu:
            dops = sorted(ops, key=_device_self_us, reverse=True)
            dtot = sum(_device_self_us(e) for e in dops) / 1e3 / args.profile
            print(f"  {names.get(k, k)} on the GPU: {dtot:.2f} ms a step of kernel time")
            for e in dops[:PROFILE_TOP]:
                print(f"    {_device_self_us(e) / 1e3 / args.profile:7.2f}  {e.key}")


def print_ablation(results, variants):
    """One row per variant: its final validation loss against exact's, per seed and the mean."""
    seeds = [r["seed"] for r in results]
    print("\n| HOT variant (--ablate line) | what | " +
          " | ".join(f"seed {s}: HOT vs exact" for s in seeds) +
          (" | mean |" if len(seeds) > 1 else ""))
    print("|---|---|" + "---|" * (len(seeds) + (1 if len(seeds) > 1 else 0)))
    e = [r["history"]["exact"]["val_loss"][-1] for r in results]
    print("| (exact) | nn.Linear / nn.MultiheadAttention | " +
          " | ".join(f"{v:.4f}" for v in e) + (f" | {sum(e) / len(e):.4f} |"
                                                if len(seeds) > 1 else " |"))
    for label, cfg in variants:
        rel = [100 * (r["history"][label]["val_loss"][-1] - ee) / ee
               for r, ee in zip(results, e)]
        cells = " | ".join(f"{r['history'][label]['val_loss'][-1]:.4f} ({x:+.2f} %)"
                           for r, x in zip(results, rel))
        mean = f" | {sum(rel) / len(rel):+.2f} % |" if len(seeds) > 1 else " |"
        print(f"| `{label}` | {describe(cfg)} | {cells}{mean}")


def print_table(results, args):
    """Exact fp32, exact bf16 autocast and HOT side by side, a row per seed and HOT dtype:
    validation loss, ms/step, saved activations (distinct storages, hot.memory)."""
    runs = hot_dtypes(args)
    print(f"\nmodel: {args.model}; validation loss after {args.steps} steps; ms/step over steps "
          "1.. (step 0 holds the setup); saved activations of one step by distinct storage "
          "(parameters excluded), measured at step 1")
    print("\n| seed | HOT | exact fp32 | exact bf16 | HOT | HOT vs fp32 | HOT vs bf16 | "
          "ms/step fp32 / bf16 / HOT | saved fp32 / bf16 / HOT | HOT saved / exact's in its "
          "dtype |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    acc = {k: [] for k in ("rel_e", "rel_b", "ratio")}
    speed = {dtype: [] for _, dtype in runs}
    for r in results:
        for key, dtype in runs:
            keys = ("exact", "bf16", key)
            v = [r["history"][k]["val_loss"][-1] for k in keys]
            ms = [r["ms_per_step"][k] for k in keys]
            sb = [r["saved_bytes"][k] for k in keys]
            # saved bytes against the exact run in HOT's own dtype (fp32 codes and tensors
            # against fp32's, bf16 autocast against bf16 autocast's)
            same = sb[1] if dtype == "bf16" else sb[0]
            rel_e, rel_b, ratio = (v[2] - v[0]) / v[0], (v[2] - v[1]) / v[1], sb[2] / same
            for k, x in zip(acc, (rel_e, rel_b, ratio)):
                acc[k].append(x)
            if min(ms) > 0:  # with --steps 1 no step is timed (step 0 holds the setup)
                speed[dtype].append((ms[2] / ms[1], ms[2] / min(ms[0], ms[1])))
            print(f"| {r['seed']} | {HOT_NAMES[dtype]} | {v[0]:.4f} | {v[1]:.4f} | {v[2]:.4f} | "
                  f"{100 * rel_e:+.2f} % | {100 * rel_b:+.2f} % | {ms[0]:.0f} / {ms[1]:.0f} / "
                  f"{ms[2]:.0f} | {sb[0] / 2**20:.2f} / {sb[1] / 2**20:.2f} / "
                  f"{sb[2] / 2**20:.2f} MiB | {ratio:.3f} |")
    worst = max(max(acc["rel_e"]), max(acc["rel_b"]))
    verdict = "within" if worst <= 0.01 else "NOT within"
    print(f"\nHOT's final validation loss is {verdict} 1 % of exact fp32's and exact bf16's on "
          f"every seed (worst {100 * worst:+.2f} %); saved activations {min(acc['ratio']):.3f}-"
          f"{max(acc['ratio']):.3f} of the exact run's in HOT's dtype")
    for dtype, v in speed.items():
        if not v:
            print(f"{HOT_NAMES[dtype]}: time per step not measured (--steps 1 times no step)")
            continue
        print(f"{HOT_NAMES[dtype]}: time per step {min(x for x, _ in v):.2f}-"
              f"{max(x for x, _ in v):.2f}x exact bf16 autocast's, {min(y for _, y in v):.2f}-"
              f"{max(y for _, y in v):.2f}x the faster exact run's")


def main():
    args = parse_args()
    import torch

    import hot
    import hot.torch as ht
    from hot.files import replace_file, replace_text

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("train_lm.py: --device cuda but torch sees no CUDA device")
    dev = torch.device(args.device)
    try:
        seeds = [NUM.parse_int("--seeds", s, 0, 2**64 - 1) for s in args.seeds.split(",")]
    except ValueError as e:
        sys.exit(f"train_lm.py: {e}")
    text, root, nfiles = load_text(int(args.text_mb * 1e6))
    data = torch.frombuffer(bytearray(text), dtype=torch.uint8).long()
    n_train = int(0.9 * len(data))
    if len(data) - n_train < args.seq + 2:  # a validation sequence and its next character
        sys.exit(f"train_lm.py: --seq {args.seq} is longer than the {len(data) - n_train} bytes of "
                 f"validation text (10 % of {len(data)}); raise --text-mb or lower --seq")
    print(f"text: {len(text)} bytes of {nfiles} .py files under {root} (90 % train, 10 % "
          f"validation); model: {args.layers} x TransformerEncoderLayer(d={args.d_model}, {args.model}, "
          f"{args.heads} heads, ff {4 * args.d_model}, pre-norm, causal), byte vocabulary 256; "
          f"batch {args.batch} x {args.seq}, AdamW lr {args.lr} (warm-up, cosine), {args.steps} "
          f"steps, device {dev}, libhot {hot.library_path()}", flush=True)
    variants = hot_variants(args)
    for label, cfg in variants:  # a bad option stops here, before any training
        check_config(cfg, args, "the command line" if label == "hot" else
                     f"--ablate {args.ablate} variant {label!r}")
        print(f"HOT{'' if label == 'hot' else ' variant ' + repr(label)}: {describe(cfg)}")
    results = []
    t0 = time.time()
    for seed in seeds:
        r = run_seed(args, seed, data, n_train, dev, variants,
                     profile=bool(args.profile) and seed == seeds[0])
        if seed == seeds[0]:
            for label, rep in r["report"].items():
                if label != "hot_fp32":  # the same conversion as "hot"'s
                    print(rep if label == "hot" else f"{label}: {rep.splitlines()[0]}")
        results.append(r)
    wall = time.time() - t0
    st = ht.context_for(dev).stats()
    print(f"\nhot: backend {st.backend}, {st.saves} saves, {st.backwards} backwards, "
          f"{st.calibrations} calibrations; {wall:.0f} s in all")
    if args.ablate is not None:
        print_ablation(results, variants)
        os.makedirs(args.out_dir, exist_ok=True)
        js = os.path.join(args.out_dir, "train_lm_ablation.json")
        replace_text(js, json.dumps({"args": vars(args), "results": results, "wall_s": wall},
                                    indent=1))
        print(f"json: {js}")
        return
    print_table(results, args)
    os.makedirs(args.out_dir, exist_ok=True)
    js = os.path.join(args.out_dir, "train_lm.json")
    replace_text(js, json.dumps({"args": vars(args), "results": results, "wall_s": wall},
                                indent=1))
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
        hots = [(k, "--" if dtype == "bf16" else "-.", f"HOT {dtype}")
                for k, dtype in hot_dtypes(args)]
        for k, style, label in [("exact", "-", "exact fp32"), ("bf16", ":", "exact bf16")] + hots:
            hh = r["history"][k]
            a1.plot(hh["step"], hh["val_loss"], style, color=c, label=f"seed {r['seed']} {label}")
        e = r["history"]["exact"]["val_loss"]
        for k, style, label in hots:
            h = r["history"][k]["val_loss"]
            a2.plot(r["history"][k]["step"], [100 * (b - a) / a for a, b in zip(e, h)], style,
                    color=c, label=f"seed {r['seed']} {label}")
    a1.set_xlabel("step")
    a1.set_ylabel("validation cross-entropy (nats/char)")
    a1.set_title(f"char LM, {args.layers} layers d={args.d_model}, seq {args.seq}")
    a1.legend(fontsize=7)
    a2.axhline(5, color="grey", lw=0.8, ls=":")
    a2.axhline(-5, color="grey", lw=0.8, ls=":")
    a2.set_xlabel("step")
    a2.set_ylabel("HOT vs exact fp32 validation loss (%)")
    a2.set_title("relative difference (goal: within 5 %)")
    a2.legend(fontsize=7)
    fig.suptitle(f"HOT: {describe(args)}", fontsize=9)
    fig.tight_layout()
    png = os.path.join(args.out_dir, "train_lm.png")
    replace_file(png, lambda tmp: fig.savefig(tmp, dpi=100))
    print(f"plot: {png}")


if __name__ == "__main__":
    main()
