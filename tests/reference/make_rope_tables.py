"""PyTorch's rotary tables over many bases, widths and lengths: data/reference/<flavour>/rope_tables.json.

Each case runs the recipe below (the one make_modern_references.py traces) for a base θ, a head
width d and T positions, in both pairings, and keeps the bits of inv_freq and the SHA-256 of the
little-endian float32 bytes of the cos and sin tables. The bases run from the smallest float32
numbers to the largest, where one unit in the last place of inv_freq moves the angles by whole
turns, so only PyTorch's own operations give its tables: in the AVX2 kernels, SLEEF's vectorised
pow over blocks of 16 exponents and powf over the rest, and SLEEF's cos and sin on every element.
The widths cover every size of pow's tail (d/2 mod 16) and T·d with and without a partial vector.
A case whose inv_freq or angles overflow float32 (the tables would be nan) is kept with
"overflow": true and no tables: the tool refuses it.

Run from the project root with Debian's PyTorch (python3-torch 1.13.1):

    /usr/bin/python3 tests/reference/make_rope_tables.py

It runs itself again with Debian's reference BLAS and, for the "default" flavour, with
ATEN_CPU_CAPABILITY=default, one thread. It is not run by CI.
"""
import hashlib
import os
import subprocess
import sys
from pathlib import Path

REFERENCE_BLAS = "/usr/lib/x86_64-linux-gnu/blas"
if __name__ == "__main__" and os.environ.get("LD_LIBRARY_PATH") != REFERENCE_BLAS:
    sys.exit(subprocess.run([sys.executable, __file__],
                            env={**os.environ, "LD_LIBRARY_PATH": REFERENCE_BLAS}).returncode)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from make_references import FLAVOURS, capability, env_info, write  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

RECIPE = """\
inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2).float() / d))
angles = torch.outer(torch.arange(T).float(), inv_freq)                 # (T, d/2)
angles = torch.cat([angles, angles], dim=-1) if pairs == "half" else angles.repeat_interleave(2, dim=-1)
cos, sin = torch.cos(angles), torch.sin(angles)                         # (T, d)"""

# From the smallest normal float32 to the largest: tiny and huge bases, 1, and the usual ones.
THETAS = [1.1754944e-38, 1e-30, 1e-20, 1e-5, 0.5, 0.999, 1.0, 1.0000001, 1.5, 2.0, 7.0, 100.0,
          10000.0, 12345.678, 50000.0, 500000.0, 1e6, 1e9, 1e20, 3.4028235e38]
# d/2 = 1 … 64: pow's vectorised loop takes blocks of 16, its tail the rest.
WIDTHS = [2, 4, 6, 8, 14, 16, 30, 32, 34, 46, 48, 62, 64, 66, 96, 126, 128]
LONG = [(10000.0, 128), (50000.0, 48), (500000.0, 64), (1e-5, 64), (1e6, 126), (10000.0, 2),
        (1.5, 34), (3.4028235e38, 96)]
# At float32's limits: some overflow (inv_freq or the last angles), some just do not.
EDGES = [(1e-45, 16, 9), (1e-40, 4, 9), (1e-40, 128, 9), (1.1754944e-38, 128, 6000), (1e-30, 128, 40)]


def tables(theta, d, T, pairs):
    scope = {"torch": torch, "theta": theta, "d": d, "T": T, "pairs": pairs}
    exec(RECIPE, scope)  # the recipe string is the exact code that makes the tables
    return scope["inv_freq"], scope["angles"], scope["cos"], scope["sin"]


def bits(t):
    return [f"{b:08x}" for b in t.contiguous().numpy().view(np.uint32).reshape(-1)]


def sha256(t):
    return hashlib.sha256(t.contiguous().numpy().astype("<f4").tobytes()).hexdigest()


def case(theta, d, T, pairs):
    inv_freq, angles, cos, sin = tables(theta, d, T, pairs)
    out = {"theta": theta, "theta_f32_bits": bits(torch.tensor([theta], dtype=torch.float32))[0],
           "d": d, "T": T, "pairs": pairs}
    if not (torch.isfinite(inv_freq).all() and torch.isfinite(angles).all()):
        out["overflow"] = True
        return out
    out.update({"overflow": False, "inv_freq_bits": bits(inv_freq),
                "cos_sha256_f32le": sha256(cos), "sin_sha256_f32le": sha256(sin),
                "cos_last_bits": bits(cos.reshape(-1)[-3:]), "sin_last_bits": bits(sin.reshape(-1)[-3:])})
    return out


def cases():
    for theta in THETAS:
        for d in WIDTHS:
            yield theta, d, 40, "half"
    for theta, d in LONG:
        yield theta, d, 6000, "half"
    for theta in (10000.0, 1e-20, 3.4028235e38):
        for d, T in ((2, 1), (6, 9), (34, 9), (64, 513), (46, 513)):
            yield theta, d, T, "interleaved"
    yield 500000.0, 64, 6000, "interleaved"
    for theta, d, T in EDGES:
        yield theta, d, T, "half"


def main():
    flavour = "default" if os.environ.get("ATEN_CPU_CAPABILITY") == "default" else "avx2"
    if capability() != FLAVOURS[flavour]:
        sys.exit(f"expected CPU capability {FLAVOURS[flavour]!r}, got {capability()!r}")
    torch.set_num_threads(1)
    out = ROOT / "data" / "reference" / flavour
    document = {"env": env_info(), "recipe": RECIPE,
                "cases": [case(*c) for c in cases()]}
    write(out / "rope_tables.json", document)
    if flavour == "avx2":
        subprocess.run([sys.executable, __file__], check=True,
                       env={**os.environ, "ATEN_CPU_CAPABILITY": "default"})


if __name__ == "__main__":
    main()
