"""PyTorch references for today's attention variants: data/reference/<flavour>/modern_<case>.json.

Rotary position embeddings (the half pairing of Llama in Hugging Face and LLMs-from-scratch, and
GPT-J's interleaved pairs), grouped-query and multi-query attention (K/V heads shared with
repeat_interleave), and sliding-window masks, alone and together, with heads in both forms, causal
masks, a padded batch, and every weight init. Each file has the layout of variants.py's files;
"settings" names every setting of the run. The recipe of every case is the PyTorch code of
RECIPE below.

Run from the project root with Debian's PyTorch (python3-torch 1.13.1):

    /usr/bin/python3 tests/reference/make_modern_references.py

It runs itself again with Debian's reference BLAS and, for the "default" flavour, with
ATEN_CPU_CAPABILITY=default. It is not run by CI.
"""
import os
import subprocess
import sys
from pathlib import Path

REFERENCE_BLAS = "/usr/lib/x86_64-linux-gnu/blas"
if __name__ == "__main__" and os.environ.get("LD_LIBRARY_PATH") != REFERENCE_BLAS:
    sys.exit(subprocess.run([sys.executable, __file__],
                            env={**os.environ, "LD_LIBRARY_PATH": REFERENCE_BLAS}).returncode)

import torch  # noqa: E402

from make_references import FLAVOURS, capability, env_info, write  # noqa: E402
from variants import ARTICLE, FOX, PAD, attend, document, embedding, pick, steps, tokenize  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

RECIPE = """\
def rope_tables(T, d, theta, pairs):
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2).float() / d))
    angles = torch.outer(torch.arange(T).float(), inv_freq)             # (T, d/2)
    angles = torch.cat([angles, angles], dim=-1) if pairs == "half" else angles.repeat_interleave(2, dim=-1)
    return torch.cos(angles), torch.sin(angles)                         # rope_cos, rope_sin

def rotate(x, cos, sin, pairs):                                         # x: (..., T, d)
    if pairs == "half":
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
        turned = torch.cat((-x2, x1), dim=-1)                           # rotate_half
    else:
        turned = torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)  # rotate_every_two
    return x * cos + turned * sin

# split form: q = queries.view(B, T, H, hd).transpose(1, 2); k, v = keys/values.view(B, T, N, hd)...
# q, k = rotate(q, cos, sin), rotate(k, cos, sin)   # each query head and each K head, before sharing
# k, v = k.repeat_interleave(H // N, dim=1), v.repeat_interleave(H // N, dim=1)
# mask = triu(ones(T, T), 1) | tril(ones(T, T), -W) (| padding); then as variants.py's attend"""


def rope_tables(T, d, theta, pairs):
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2).float() / d))
    angles = torch.outer(torch.arange(T).float(), inv_freq)
    if pairs == "half":
        angles = torch.cat([angles, angles], dim=-1)
    else:
        angles = angles.repeat_interleave(2, dim=-1)
    return torch.cos(angles), torch.sin(angles)


def rotate(x, cos, sin, pairs):
    if pairs == "half":
        h = x.shape[-1] // 2
        turned = torch.cat((-x[..., h:], x[..., :h]), dim=-1)
    else:
        turned = torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)
    return x * cos + turned * sin


def draw(init, d_in, d_out):
    if init == "rand":
        return torch.rand(d_in, d_out)
    if init == "rand-transposed":
        return torch.rand(d_out, d_in)
    return torch.nn.Linear(d_in, d_out, bias=False).weight.detach()


def apply(init, x, w):
    if init == "rand":
        return x @ w
    if init == "rand-transposed":
        return w.matmul(x.T).T
    return torch.nn.functional.linear(x, w)


def make_mask(T, ids, pad_id, causal, window):
    mask = torch.zeros(len(ids), T, T, dtype=torch.bool)
    if causal:
        mask |= torch.triu(torch.ones(T, T), diagonal=1).bool()
    if window:
        mask |= torch.tril(torch.ones(T, T), diagonal=-window).bool()
    if pad_id is not None:
        valid = torch.tensor(ids) != pad_id
        mask |= ~(valid[:, :, None] & valid[:, None, :])
    return mask if (causal or pad_id is not None) else None


def case(name, env, sentences=(ARTICLE,), seed=123, vocab_size=50000, d_in=3, d_kq=2, d_v=4,
         heads=1, kv_heads=None, multihead="wrapper", init="rand", window=0, causal=False,
         rope=False, theta=10000.0, pairs="half"):
    kv_heads = kv_heads or heads
    causal = causal or window > 0
    split = multihead == "split"
    sentences = list(sentences)
    words, dictionary = tokenize(*sentences)
    T = max(len(w) for w in words)
    pad_id = None
    if any(len(w) < T for w in words):
        pad_id = len(dictionary)
        dictionary[PAD] = pad_id
    ids = [[dictionary[w] for w in ws] + [pad_id] * (T - len(ws)) for ws in words]
    B = len(ids)
    X = embedding(seed, vocab_size, d_in, ids, padding_idx=pad_id)  # (B, T, d_in)
    one = B == 1
    torch.manual_seed(seed)
    mask = make_mask(T, ids, pad_id, causal, window)
    hd = d_kq // heads if split else d_kq
    cos, sin = rope_tables(T, hd, theta, pairs) if rope else (None, None)
    out = []
    batch = (lambda b: None) if one else (lambda b: b)
    head = (lambda h: None) if heads == 1 else (lambda h: h)
    if not split:
        weights = [(draw(init, d_in, d_kq), draw(init, d_in, d_kq), draw(init, d_in, d_v))
                   for _ in range(heads)]
        for h, (wq, wk, wv) in enumerate(weights):
            out += steps([("w_query", wq), ("w_key", wk), ("w_value", wv)], head=head(h))
        for b in range(B):
            x = X[b]
            zs = []
            for h, (wq, wk, wv) in enumerate(weights):
                q, k, v = apply(init, x, wq), apply(init, x, wk), apply(init, x, wv)
                named = [("queries", q), ("keys", k), ("values", v)]
                if rope:
                    q, k = rotate(q, cos, sin, pairs), rotate(k, cos, sin, pairs)
                    named += [("rotated_queries", q), ("rotated_keys", k)]
                named += attend(q, k, v, d_kq, None if mask is None else mask[b].float(),
                                both_ways=causal)
                zs.append(named[-1][1])
                out += steps(named, head=head(h), batch=batch(b))
            if heads > 1:
                out += steps([("context_concat", torch.cat(zs, dim=-1))], batch=batch(b))
    else:
        d_out, kvw = d_kq, kv_heads * hd
        wq, wk, wv = draw(init, d_in, d_out), draw(init, d_in, kvw), draw(init, d_in, kvw)
        named_w = [("w_query", wq), ("w_key", wk), ("w_value", wv)]
        if init == "linear":
            out_proj = torch.nn.Linear(d_out, d_out)
            wo, bo = out_proj.weight.detach(), out_proj.bias.detach()
            named_w += [("w_out", wo), ("b_out", bo)]
        else:
            wo = torch.rand(d_out, d_out)
            named_w += [("w_out", wo)]
        out += steps(named_w)
        for b in range(B):
            x = X[b]
            queries, keys, values = apply(init, x, wq), apply(init, x, wk), apply(init, x, wv)
            named = [("queries", queries), ("keys", keys), ("values", values)]
            q = queries.view(T, heads, hd).transpose(0, 1)
            k = keys.view(T, kv_heads, hd).transpose(0, 1)
            v = values.view(T, kv_heads, hd).transpose(0, 1)
            if rope:
                q, k = rotate(q, cos, sin, pairs), rotate(k, cos, sin, pairs)
                named += [("rotated_queries", q.transpose(0, 1).reshape(T, d_out)),
                          ("rotated_keys", k.transpose(0, 1).reshape(T, kvw))]
            k = k.repeat_interleave(heads // kv_heads, dim=0)
            v = v.repeat_interleave(heads // kv_heads, dim=0)
            per_head = attend(q, k, v, hd, None if mask is None else mask[b].float(),
                              both_ways=causal)
            out += steps(named, batch=batch(b))
            for h in range(heads):
                out += steps(pick(per_head, h), head=head(h), batch=batch(b))
            cc = per_head[-1][1].transpose(0, 1).contiguous().view(T, d_out)
            if init == "linear":
                o = torch.nn.functional.linear(cc, wo, bo)
            else:
                o = apply(init, cc, wo)
            if heads > 1:
                out += steps([("context_concat", cc)], batch=batch(b))
            out += steps([("output", o)], batch=batch(b))
    if rope:
        out += steps([("rope_cos", cos), ("rope_sin", sin)])
    out += [s for b in range(B) for s in steps([("embeddings", X[b])], batch=batch(b))]
    settings = {"sentences": sentences, "seed": seed, "vocab_size": vocab_size, "d_in": d_in,
                "d_kq": d_kq, "d_v": d_v, "heads": heads, "kv_heads": kv_heads,
                "multihead": multihead, "init": init, "causal": causal, "window": window,
                "rope": rope, "rope_theta": theta, "rope_pairs": pairs}
    return document(name, env, RECIPE, settings, dictionary, words, ids, out)


LONG = " ".join(f"w{i:02d}" for i in range(40))
CASES = {
    "rope_half": dict(rope=True),
    "rope_half_wide": dict(rope=True, d_in=8, d_kq=8, d_v=6, seed=5),
    "rope_interleaved_fox_causal": dict(sentences=(FOX,), seed=7, d_in=8, d_kq=6, d_v=5,
                                        rope=True, pairs="interleaved", theta=100.0, causal=True),
    "rope_wrapper_heads2": dict(rope=True, heads=2, d_kq=4),
    "rope_split_heads2_linear_causal": dict(rope=True, heads=2, multihead="split", d_kq=8, d_v=8,
                                            init="linear", causal=True),
    "rope_long_t40": dict(sentences=(LONG,), rope=True, d_in=16, d_kq=64, d_v=8, seed=3,
                          theta=500000.0),
    "gqa_4_2_linear": dict(heads=4, kv_heads=2, multihead="split", d_kq=8, d_v=8, init="linear"),
    "mqa_4_1_rand_causal": dict(heads=4, kv_heads=1, multihead="split", d_kq=8, d_v=8,
                                causal=True),
    "gqa_6_3_rand_transposed": dict(sentences=(FOX,), seed=11, d_in=5, heads=6, kv_heads=3,
                                    multihead="split", d_kq=12, d_v=12, init="rand-transposed"),
    "gqa_4_4_linear": dict(heads=4, kv_heads=4, multihead="split", d_kq=8, d_v=8, init="linear"),
    "window_3": dict(window=3),
    "window_1_fox": dict(sentences=(FOX,), seed=7, d_in=8, d_kq=4, d_v=5, window=1),
    "window_rope_gqa_fox": dict(sentences=(FOX,), seed=7, d_in=8, heads=4, kv_heads=2,
                                multihead="split", d_kq=8, d_v=8, init="linear", window=3,
                                rope=True),
    "batch_window_rope_wrapper": dict(sentences=(ARTICLE, "eat dessert", "short life is sweet"),
                                      heads=2, d_kq=4, window=2, rope=True, pairs="interleaved"),
    "batch_gqa_split": dict(sentences=(ARTICLE, "eat dessert"), heads=4, kv_heads=2,
                            multihead="split", d_kq=8, d_v=8, init="linear", rope=True),
}


def main():
    flavour = "default" if os.environ.get("ATEN_CPU_CAPABILITY") == "default" else "avx2"
    if capability() != FLAVOURS[flavour]:
        sys.exit(f"expected CPU capability {FLAVOURS[flavour]!r}, got {capability()!r}")
    torch.set_num_threads(1)
    out = ROOT / "data" / "reference" / flavour
    for name, kwargs in CASES.items():
        write(out / f"modern_{name}.json", case(name, env_info(), **kwargs))
    if flavour == "avx2":
        subprocess.run([sys.executable, __file__], check=True,
                       env={**os.environ, "ATEN_CPU_CAPABILITY": "default"})


if __name__ == "__main__":
    main()
