"""Make the PyTorch reference values that attn-trace's tests compare against.

Writes data/reference/avx2/*.json (PyTorch's AVX2 CPU kernels) and data/reference/default/*.json
(the same recipes with ATEN_CPU_CAPABILITY=default, the non-AVX kernels): rng.json (the generator on
its own: rand, randn, normal_, uniform_, nn.Embedding and nn.Linear initialisation), one
trace_<case>.json per attention walkthrough case, and one variant_<case>.json per case of variants.py
(causal, multi-head, cross-attention, other weight initialisations, a padded batch; see there).

Run from the project root with Debian's PyTorch (python3-torch 1.13.1), not the pyenv python:

    /usr/bin/python3 tests/reference/make_references.py

It runs itself a second time in a subprocess for the "default" flavour. It is not run by CI.

Every tensor is {"shape", "values" (exact float32 values), "bits" (IEEE-754 binary32, 8 hex digits)}.
In rng.json, the tensors of a case named *_digest or holding a tensor of more than FULL_LIMIT
elements (except the cases in ALWAYS_FULL) are digests instead, to keep the file near 200 KB: {"shape", "sha256_f32le" (of its little-endian
float32 bytes, row-major), "sum_f64" (math.fsum of the values, exactly rounded), "first_values" and
"last_values" (the first and last 16 flattened elements), and for 2-D tensors "rows" (rows 0, 1,
R//2 and R-1; all columns when there are at most 32, else only the first 16, see "columns")}.
"""
import hashlib
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

# PyTorch's matmul must be the reference BLAS's (the order attn-trace reproduces), whatever
# libblas.so.3 points to (installing libopenblas0-pthread switches it): run again with Debian's
# reference BLAS first on the library path.
REFERENCE_BLAS = "/usr/lib/x86_64-linux-gnu/blas"
if __name__ == "__main__" and os.environ.get("LD_LIBRARY_PATH") != REFERENCE_BLAS:
    sys.exit(subprocess.run([sys.executable, __file__],
                            env={**os.environ, "LD_LIBRARY_PATH": REFERENCE_BLAS}).returncode)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from variants import make_variants

ROOT = Path(__file__).resolve().parents[2]
FLAVOURS = {"avx2": "AVX2", "default": "NO AVX"}
FULL_LIMIT = 256  # see the docstring
ALWAYS_FULL = {"randn_4097_seed123"}


def capability():
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage:" in line:
            return line.split(":", 1)[1].strip()
    raise RuntimeError("torch.__config__.show() names no CPU capability")


def env_info():
    return {
        "torch_version": torch.__version__,
        "cpu_capability": capability(),
        "ATEN_CPU_CAPABILITY_env": os.environ.get("ATEN_CPU_CAPABILITY"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "num_threads": torch.get_num_threads(),
    }


def values_bits(t):
    """{"values", "bits"} of a float32 tensor, nested like the tensor."""
    t = t.detach().to(torch.float32).contiguous()
    bits = t.numpy().view(np.uint32)
    return {"values": t.tolist(), "bits": np.vectorize(lambda b: f"{b:08x}")(bits).tolist()}


def full(t):
    return {"shape": list(t.shape), **values_bits(t)}


def digest(t):
    t = t.detach().to(torch.float32).contiguous()
    flat = t.reshape(-1)
    out = {
        "shape": list(t.shape),
        "sha256_f32le": hashlib.sha256(flat.numpy().astype("<f4").tobytes()).hexdigest(),
        "sum_f64": math.fsum(flat.tolist()),
        "first_values": values_bits(flat[:16]),
        "last_values": values_bits(flat[-16:]),
    }
    if t.dim() == 2:
        rows, cols = t.shape
        index = [0, 1, rows // 2, rows - 1]
        columns = cols if cols <= 32 else 16
        out["rows"] = {"index": index, "columns": columns, **values_bits(t[index, :columns])}
    return out


def rng_recipes():
    """(name, recipe): each recipe is Python code run as written; it leaves its tensors in `t`."""
    def seeded(seed, body):
        return f"torch.manual_seed({seed}); {body}"

    cases = [
        ("rand_3x2_3x2_3x4_seed123",
         seeded(123, "t = [torch.rand(3, 2), torch.rand(3, 2), torch.rand(3, 4)]")),
        ("rand_2000_seed123", seeded(123, "t = [torch.rand(2000)]")),
        ("rand_4_seed_2p32_plus_123", seeded(2**32 + 123, "t = [torch.rand(4)]")),
        ("randn_sequence_seed123_1_to_15", seeded(123, "t = [torch.randn(n) for n in range(1, 16)]")),
        ("randn_3_20_3_seed123", seeded(123, "t = [torch.randn(3), torch.randn(20), torch.randn(3)]")),
    ]
    cases += [(f"randn_{n}_seed123", seeded(123, f"t = [torch.randn({n})]"))
              for n in (16, 17, 31, 32, 33, 100, 4097)]
    cases += [
        ("normal_2_3_n100_seed5", seeded(5, "t = [torch.empty(100).normal_(2, 3)]")),
        ("normal_2_3_n7_seed5", seeded(5, "t = [torch.empty(7).normal_(2, 3)]")),
        ("normal_0.1_0.02_n1000_seed9", seeded(9, "t = [torch.empty(1000).normal_(0.1, 0.02)]")),
        ("uniform_m1_1_n5000_seed11", seeded(11, "t = [torch.empty(5000).uniform_(-1, 1)]")),
        ("uniform_0.3_7.1_n5000_seed11", seeded(11, "t = [torch.empty(5000).uniform_(0.3, 7.1)]")),
    ]
    embeddings = [(1, 1, 123), (3, 2, 123), (5, 3, 123), (4, 4, 123), (6, 3, 123), (10, 3, 123),
                  (7, 5, 123), (100, 7, 123), (33, 1, 123), (1000, 17, 123), (50, 8, 0), (50, 8, 1),
                  (50, 8, 42), (50, 8, 2**32 + 7), (50, 8, 987654321)]
    cases += [(f"embedding_{v}x{d}_seed{s}", seeded(s, f"t = [torch.nn.Embedding({v}, {d}).weight]"))
              for v, d, s in embeddings]
    cases += [(f"embedding_{v}x{d}_seed{s}_digest", seeded(s, f"t = [torch.nn.Embedding({v}, {d}).weight]"))
              for v, d, s in ((50000, 3, 123), (1000, 4096, 3))]
    cases += [(f"linear_{i}to{o}_x3_nobias_seed123",
               seeded(123, f"t = [torch.nn.Linear({i}, {o}, bias=False).weight for _ in range(3)]"))
              for i, o in ((3, 2), (8, 4), (5, 7), (768, 64))]
    cases.append(("linear_6to4_bias_then_4to3_bias_seed123",
                  seeded(123, "a = torch.nn.Linear(6, 4); b = torch.nn.Linear(4, 3); "
                              "t = [a.weight, a.bias, b.weight, b.bias]")))
    return cases


def make_rng():
    cases = {}
    for name, recipe in rng_recipes():
        scope = {"torch": torch}
        exec(recipe, scope)  # the recipe string is the exact code that made the tensors
        store_full = name in ALWAYS_FULL or (not name.endswith("_digest")
                                             and all(t.numel() <= FULL_LIMIT for t in scope["t"]))
        cases[name] = {"recipe": recipe,
                       "tensors": [full(t) if store_full else digest(t) for t in scope["t"]]}
    return {"case": "rng", "env": env_info(), "cases": cases}


TRACE_CASES = {
    "article": ("Life is short, eat dessert first", 123, 50000, 3, 2, 4),
    "fox_seed7": ("The quick brown fox jumps over the lazy dog", 7, 50000, 8, 4, 5),
    "repeated_seed42": ("the cat sat on the mat, and the dog sat too", 42, 1000, 6, 3, 2),
    "long_seed2p32": ("The naïve barista at the café wrote a résumé, the café closed",
                      2**32 + 99, 20, 5, 5, 3),
    "tiny_seed1": ("hello world", 1, 3, 2, 1, 1),
}

TRACE_RECIPE = {
    "tokenize": "words = sentence.replace(',', '').split(); vocabulary = sorted(set(words)) "
                "(code-point order); dictionary = {w: i for i, w in enumerate(vocabulary)}; "
                "token_ids = [dictionary[w] for w in words]",
    "embedding": "torch.manual_seed(seed); embed = torch.nn.Embedding(vocab_size, d_in); "
                 "X = embed(torch.tensor(token_ids)).detach()",
    "weights": "torch.manual_seed(seed); W_query = torch.rand(d_in, d_kq); "
               "W_key = torch.rand(d_in, d_kq); W_value = torch.rand(d_in, d_v)",
    "forward": "queries = X @ W_query; keys = X @ W_key; values = X @ W_value; "
               "omega = queries @ keys.T; scaled = omega / d_kq**0.5; "
               "attn = torch.softmax(scaled, dim=-1); context = attn @ values",
}


def make_trace(name, sentence, seed, vocab_size, d_in, d_kq, d_v):
    words = sentence.replace(",", "").split()
    dictionary = {w: i for i, w in enumerate(sorted(set(words)))}
    token_ids = [dictionary[w] for w in words]
    assert len(dictionary) <= vocab_size
    torch.manual_seed(seed)
    embed = torch.nn.Embedding(vocab_size, d_in)
    X = embed(torch.tensor(token_ids)).detach()
    torch.manual_seed(seed)
    W_query = torch.rand(d_in, d_kq)
    W_key = torch.rand(d_in, d_kq)
    W_value = torch.rand(d_in, d_v)
    queries = X @ W_query
    keys = X @ W_key
    values = X @ W_value
    omega = queries @ keys.T
    scaled = omega / d_kq**0.5
    attn = torch.softmax(scaled, dim=-1)
    context = attn @ values
    steps = {"embeddings": X, "w_query": W_query, "w_key": W_key, "w_value": W_value,
             "queries": queries, "keys": keys, "values": values, "omega": omega,
             "scaled_scores": scaled, "attention_weights": attn, "context_vectors": context}
    return {
        "case": name,
        "env": env_info(),
        "recipe": TRACE_RECIPE,
        "settings": {"sentence": sentence, "seed": seed, "vocab_size": vocab_size,
                     "d_in": d_in, "d_kq": d_kq, "d_v": d_v},
        "dictionary": dictionary,
        "words": words,
        "token_ids": token_ids,
        "steps": {k: full(v) for k, v in steps.items()},
    }


def to_json(obj, depth=0):
    """JSON indented by one space per level, with every list of scalars on a single line."""
    pad = " " * (depth + 1)
    if isinstance(obj, dict) and obj:
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {to_json(v, depth + 1)}"
                 for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"
    if isinstance(obj, list) and any(isinstance(x, (list, dict)) for x in obj):
        return "[\n" + ",\n".join(pad + to_json(x, depth + 1) for x in obj) + "\n" + " " * depth + "]"
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def write(path, obj):
    path.write_text(to_json(obj) + "\n", encoding="utf-8")
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes")


def main():
    flavour = "default" if os.environ.get("ATEN_CPU_CAPABILITY") == "default" else "avx2"
    if capability() != FLAVOURS[flavour]:
        sys.exit(f"expected CPU capability {FLAVOURS[flavour]!r} for {flavour}, got {capability()!r}")
    torch.set_num_threads(1)
    out = ROOT / "data" / "reference" / flavour
    out.mkdir(parents=True, exist_ok=True)
    write(out / "rng.json", make_rng())
    for name, settings in TRACE_CASES.items():
        write(out / f"trace_{name}.json", make_trace(name, *settings))
    for name, document in make_variants(env_info()):
        write(out / f"variant_{name}.json", document)
    if flavour == "avx2":
        subprocess.run([sys.executable, __file__], check=True,
                       env={**os.environ, "ATEN_CPU_CAPABILITY": "default"})


if __name__ == "__main__":
    main()
