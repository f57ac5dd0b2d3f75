"""Two float32 computations of GPT-2's block, bit for bit: nn.LayerNorm's and gelu_new's.

Writes, for both kernel flavours (avx2, and default with ATEN_CPU_CAPABILITY=default):
- data/reference/<flavour>/layer_norm.json: {"env", "cases": [{"name", "eps", "x", "weight",
  "bias", "y"}]}, y = F.layer_norm(x, (n,), weight, bias, eps). The lengths cover the kernel's
  paths: fewer than 8 values (the scalar update alone), multiples of 8 and not (the lanes and the
  tail), one chunk of 16 vectors and more (the cascade, 1 to 7 deep), GPT-2's 768 and 1024. The
  rows mix scales and offsets, so that the mean matters; one case has a large offset and a small
  spread (the cancellation Welford's update avoids).
- data/reference/<flavour>/gelu_new.json: {"env", "cases": [{"name", "x", "y"}]}, y = Hugging
  Face's NewGELUActivation of x, 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x +
  0.044715 * torch.pow(x, 3.0)))), on a contiguous tensor: lengths with and without a partial
  last vector of 8, values from 1e-40 to 1e20 of both signs, zeros, and a sweep of [-12, 12].
Each tensor is {shape, bits} (its float32 bit patterns, row-major). Run from the project root with
Debian's PyTorch (python3-torch 1.13.1); it runs itself once per flavour, on one thread:

    /usr/bin/python3 tests/reference/make_gpt2_kernel_references.py
"""
import math
import os
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__" and "ATTN_KERNEL_FLAVOUR" not in os.environ:
    for flavour, capability in (("avx2", None), ("default", "default")):
        env = {**os.environ, "ATTN_KERNEL_FLAVOUR": flavour}
        env.pop("ATEN_CPU_CAPABILITY", None)
        if capability:
            env["ATEN_CPU_CAPABILITY"] = capability
        code = subprocess.run([sys.executable, __file__], env=env).returncode
        if code:
            sys.exit(code)
    sys.exit(0)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_references import FLAVOURS, ROOT, capability, env_info, values_bits, write  # noqa: E402

LENGTHS = [1, 2, 3, 7, 8, 9, 15, 16, 17, 64, 127, 128, 129, 255, 256, 257, 768, 1024,
           8200]


def bits(t):
    return {"shape": list(t.shape), "bits": values_bits(t)["bits"]}


def new_gelu(x):
    """Hugging Face's NewGELUActivation (transformers' activations.py), operation by operation."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def main():
    flavour = os.environ["ATTN_KERNEL_FLAVOUR"]
    if capability() != FLAVOURS[flavour]:
        sys.exit(f"expected CPU capability {FLAVOURS[flavour]!r} for {flavour}, got {capability()!r}")
    torch.set_num_threads(1)
    torch.manual_seed(2024)
    cases = []
    for n in LENGTHS:
        for rows, scale, offset, eps in ((2, 1.0, 0.0, 1e-5), (1, 10.0, 3.0, 1e-5),
                                          (1, 0.01, 100.0, 1e-3)):
            if n == 8200 and rows > 1:
                continue
            x = torch.randn(rows, n) * scale + offset
            weight = 1 + torch.randn(n) * 0.1
            bias = torch.randn(n) * 0.1
            y = F.layer_norm(x, (n,), weight, bias, eps)
            cases.append({"name": f"n{n}_scale{scale:g}_offset{offset:g}", "eps": eps,
                          "x": bits(x), "weight": bits(weight), "bias": bits(bias), "y": bits(y)})
    out = ROOT / "data" / "reference" / flavour
    write(out / "layer_norm.json", {"env": env_info(), "cases": cases})
    gelu = []
    for n in (1, 7, 8, 9, 15, 16, 17, 31, 32, 100, 1000):
        for scale in (0.1, 1.0, 4.0):
            x = torch.randn(n) * scale
            gelu.append({"name": f"n{n}_scale{scale:g}", "x": bits(x), "y": bits(new_gelu(x))})
    wide = torch.tensor([0.0, -0.0, 1e-30, -1e-30, 1e-40, -1e-40, 100.0, -100.0, 1e20, -1e20,
                         5.0, -5.0, 9.1, -9.1, 0.5, -0.5, 3e-4, -3e-4])
    x = torch.cat([wide, torch.linspace(-12, 12, 4001)])
    gelu.append({"name": "extremes_and_sweep", "x": bits(x), "y": bits(new_gelu(x))})
    write(out / "gelu_new.json", {"env": env_info(), "cases": gelu})


if __name__ == "__main__":
    main()
