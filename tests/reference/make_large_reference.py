"""Make the PyTorch references for large shapes and for the summary's checksum.

Writes data/reference/<flavour>/large_linear_t256.json: one head of attention over a sentence of
256 distinct words ("w0 w1 ... w255"), seed 123, vocab_size 256, d_in 512, d_kq = d_v = 64,
nn.Linear weights (init linear); and large_rand_t256.json, the same with the walkthrough's
torch.rand weights (init rand). Every matrix product is at least 2^20 multiply-adds, so
attn-trace's default (--matmul auto) computes it with the blocked kernel; the tests check that it
stays within a stated tolerance of these values, and that --matmul reference gives their bits.
Each step stores its shape, math.fsum of its values, and rows 0, 1, T/2 and T-1 in full
("rows": {"index", "values", "bits"}).

Also writes data/reference/<flavour>/checksums.json: the XXH3-64 and FNV-1a 64 checksums of the
float32 bytes (little-endian, row-major) of nn.Embedding(50000, 3) after torch.manual_seed(123),
the walkthrough's table, as `--format summary` prints them.

PyTorch must use the reference BLAS (the order attn-trace reproduces), whatever libblas.so.3
points to: the script runs itself again with LD_LIBRARY_PATH set to Debian's reference BLAS, and
records which libblas it loaded. Run from the project root with Debian's PyTorch and
python3-xxhash:

    /usr/bin/python3 tests/reference/make_large_reference.py
"""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

REFERENCE_BLAS = "/usr/lib/x86_64-linux-gnu/blas"  # as make_references.py

if os.environ.get("LD_LIBRARY_PATH") != REFERENCE_BLAS:
    env = {**os.environ, "LD_LIBRARY_PATH": REFERENCE_BLAS}
    sys.exit(subprocess.run([sys.executable, __file__], env=env).returncode)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import xxhash  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_references import FLAVOURS, ROOT, capability, env_info, to_json  # noqa: E402
from variants import embedding, tokenize  # noqa: E402

T, SEED, D_IN, D_KQ, D_V = 256, 123, 512, 64, 64


def loaded_blas():
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "libblas" in line}
    return sorted(libs)


def bits(a):
    return [[f"{b:08x}" for b in row] for row in a.view(np.uint32).tolist()]


def sampled(step_id, t):
    t = t.detach().to(torch.float32).contiguous()
    rows = [0, 1, t.shape[0] // 2, t.shape[0] - 1]
    picked = t[rows].numpy()
    return {"id": step_id, "shape": list(t.shape), "sum_f64": math.fsum(t.reshape(-1).tolist()),
            "rows": {"index": rows, "values": picked.tolist(), "bits": bits(picked)}}


def large_case(env, init):
    """init "linear": nn.Linear's weights (kaiming uniform), scores of order 1; "rand": the
    walkthrough's torch.rand(d_in, d_out), all positive, whose scores grow with d_in (into the
    hundreds here), so that the softmax magnifies the products' last bits."""
    sentence = " ".join(f"w{i}" for i in range(T))
    (words,), dictionary = tokenize(sentence)
    ids = [dictionary[w] for w in words]
    X = embedding(SEED, T, D_IN, ids)
    torch.manual_seed(SEED)
    if init == "linear":
        W_query = torch.nn.Linear(D_IN, D_KQ, bias=False).weight.detach()
        W_key = torch.nn.Linear(D_IN, D_KQ, bias=False).weight.detach()
        W_value = torch.nn.Linear(D_IN, D_V, bias=False).weight.detach()
        project = torch.nn.functional.linear
    else:
        W_query, W_key, W_value = (torch.rand(D_IN, d) for d in (D_KQ, D_KQ, D_V))
        project = torch.matmul
    with torch.no_grad():
        queries, keys, values = (project(X, w) for w in (W_query, W_key, W_value))
        omega = queries @ keys.T
        scaled = omega / D_KQ**0.5
        weights = torch.softmax(scaled, dim=-1)
        context = weights @ values
    named = [("embeddings", X), ("w_query", W_query), ("w_key", W_key),
             ("w_value", W_value), ("queries", queries), ("keys", keys),
             ("values", values), ("omega", omega), ("scaled_scores", scaled),
             ("attention_weights", weights), ("context_vectors", context)]
    weights_text = ("W_query, W_key, W_value = nn.Linear(512, 64, bias=False) x 3\n"
                    "queries = W_query(X) ...") if init == "linear" else (
                    "W_query, W_key, W_value = torch.rand(512, 64) x 3\nqueries = X @ W_query ...")
    recipe = ("sentence = ' '.join(f'w{i}' for i in range(256)); dictionary and ids as the "
              "walkthrough\ntorch.manual_seed(123); X = nn.Embedding(256, 512)(ids)\n"
              f"torch.manual_seed(123); {weights_text}; omega = queries @ keys.T; "
              "scaled_scores = omega / 64**0.5\n"
              "attention_weights = torch.softmax(scaled_scores, dim=-1); "
              "context_vectors = attention_weights @ values")
    settings = {"sentence": sentence, "seed": SEED, "vocab_size": T, "d_in": D_IN, "d_kq": D_KQ,
                "d_v": D_V, "heads": 1, "causal": False, "init": init}
    return {"case": f"large_{init}_t256", "env": env, "recipe": {"text": recipe},
            "settings": settings, "steps": [sampled(n, t) for n, t in named]}


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def checksums(env):
    torch.manual_seed(123)
    table = torch.nn.Embedding(50000, 3).weight.detach().contiguous()
    data = table.numpy().astype("<f4").tobytes()
    return {"case": "checksums", "env": env,
            "recipe": {"text": "torch.manual_seed(123); t = torch.nn.Embedding(50000, 3).weight; "
                               "checksums of t.numpy().astype('<f4').tobytes()"},
            "embedding_50000x3_seed123": {"shape": [50000, 3],
                                          "xxh3_64_f32le": xxhash.xxh3_64_hexdigest(data),
                                          "fnv1a64_f32le": f"{fnv1a64(data):016x}"}}


def main():
    flavour = "default" if os.environ.get("ATEN_CPU_CAPABILITY") == "default" else "avx2"
    if capability() != FLAVOURS[flavour]:
        sys.exit(f"expected CPU capability {FLAVOURS[flavour]!r} for {flavour}, got {capability()!r}")
    torch.set_num_threads(1)
    env = {**env_info(), "libblas": loaded_blas()}
    if not all(lib.startswith(REFERENCE_BLAS + "/") for lib in env["libblas"]):
        sys.exit(f"expected the reference BLAS from {REFERENCE_BLAS}, loaded {env['libblas']}")
    out = ROOT / "data" / "reference" / flavour
    for name, doc in (("large_linear_t256", large_case(env, "linear")),
                      ("large_rand_t256", large_case(env, "rand")), ("checksums", checksums(env))):
        path = out / f"{name}.json"
        path.write_text(to_json(doc) + "\n", encoding="utf-8")
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes")
    if flavour == "avx2":
        subprocess.run([sys.executable, __file__], check=True,
                       env={**os.environ, "ATEN_CPU_CAPABILITY": "default"})


if __name__ == "__main__":
    main()
