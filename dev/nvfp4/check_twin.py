"""The study's fake quantisers (nvfp4.py) against the C twin (templates/nvfp4_ref.c) on a few
tensors: the same E2M1/E4M3 values, block scales and tensor scale, RTN and SR (the SR draws from
Philox on both sides). Compiles twin_dump.c with cc into a temporary folder.

    python3 dev/nvfp4/check_twin.py
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TPL = os.path.join(HERE, "..", "..", "templates")
sys.path.insert(0, HERE)
import nvfp4 as q  # noqa: E402


def tensors():
    g = torch.Generator().manual_seed(5)
    yield "normal", torch.randn(24, 64, generator=g)
    t = torch.randn(24, 64, generator=g) * torch.logspace(-6, 6, 64)  # 12 decades across k
    yield "wide range", t
    u = torch.randn(16, 96, generator=g)
    u[3] = 0.0  # a zero row: zero blocks
    u[5, 7] = 1e4  # one outlier
    yield "zeros + outlier", u
    yield "ties", (torch.randint(0, 25, (8, 64), generator=g).float() - 12) / 4  # k/4 grid


def main():
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "twin_dump")
        subprocess.run(["cc", "-std=c11", "-O1", "-ffp-contract=off", "-I", TPL, "-o", exe,
                        os.path.join(HERE, "twin_dump.c"), os.path.join(TPL, "nvfp4_ref.c"), "-lm"],
                       check=True)
        bad = 0
        for name, v in tensors():
            R, K = v.shape
            inp = np.int64([R, K]).tobytes() + v.numpy().astype(np.float32).tobytes()
            out = np.frombuffer(subprocess.run([exe], input=inp, capture_output=True, check=True).stdout,
                                dtype=np.float32)
            pos = 0

            def take(n):
                nonlocal pos
                pos += n
                return torch.from_numpy(out[pos - n:pos].copy())
            idx = np.arange(R * K, dtype=np.uint64)
            rho = q.rho_of_words(q.philox_words(idx, 7, 17, 3)).reshape(R, K)
            for sr in (0, 1):
                cq, cs, ct = take(R * K).reshape(R, K), take(R * K // 16), take(1)
                pq, _, ps, pt = q.nvfp4_quant(v, sr=bool(sr), rho=rho if sr else None, codes=True)
                ok = torch.equal(cq, pq.reshape(R, K)) and torch.equal(cs, ps.reshape(-1)) and \
                    float(ct) == float(pt)
                bad += not ok
                print(f"  {name:16s} NVFP4 {'SR ' if sr else 'RTN'}: {'same codes, scales' if ok else 'DIFFER'}")
            for sr in (0, 1):
                cq, ce = take(R * K).reshape(R, K), take(R * K // 32)
                X = torch.ldexp(torch.ones(R * K // 32), ce.to(torch.int32)).reshape(R, K // 32, 1)
                pdq = q.mxfp8_quant(v, sr=bool(sr), rho=rho if sr else None).reshape(R, K // 32, 32)
                ok = torch.equal((cq.reshape(R, K // 32, 32) * X), pdq)
                bad += not ok
                print(f"  {name:16s} MXFP8 {'SR ' if sr else 'RTN'}: {'same values' if ok else 'DIFFER'}")
        print("check_twin: " + ("all equal" if not bad else f"{bad} differ"))
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
