"""References for --decode and --online-softmax: data/reference/<flavour>/variant_{decode,online}_*.json.

Each case embeds and projects as variants.py does, then runs, per head and batch item, in PyTorch:
- decode: the KV-cache loop of a model's generate(): for t = 0 .. T-1 the new token's q, k, v from
  x_t alone (x_t @ W, or W(x_t) for nn.Linear, then the head's columns), the caches grown with
  torch.cat, the row s = (q_t @ K_cache.T).masked_fill(padding, -inf) / d**0.5, softmax, and
  z_t = a @ V_cache; decode_check stacks every z_t.
- online: FlashAttention's loop over tiles of B keys, row by row: m = -inf, l = 0, O = 0; a tile
  whose scores are all -inf is skipped; else m' = maximum(m, S.max(-1)), c = exp(m - m'),
  P = exp(S - m'), l = c * l + P.sum(-1), O = c * O + P @ V_tile, m = m'; Z = O / l.
With rotary embeddings (make_modern_references.py's tables and rotation), decode rotates each new
token's q_t and k_t at its position t, and online reads the rotated Q and K; with K/V heads shared
(--kv-heads), query head h reads K/V head h // (H / N); with a window W, the cache keeps its last W
keys and values, and online's scores carry the band mask (a tile wholly outside it is skipped).
The steps hold only these (the ordinary steps have their own references); the files have the
layout of variants.py's. Run with python3-torch 1.13.1: it runs itself again with Debian's
reference BLAS on the library path, and again for the default kernels.
"""
import math
import os
import subprocess
import sys
from pathlib import Path

REFERENCE_BLAS = "/usr/lib/x86_64-linux-gnu/blas"
if __name__ == "__main__" and os.environ.get("LD_LIBRARY_PATH") != REFERENCE_BLAS:
    sys.exit(subprocess.run([sys.executable, __file__],
                            env={**os.environ, "LD_LIBRARY_PATH": REFERENCE_BLAS}).returncode)

import torch  # noqa: E402

from make_references import ROOT, FLAVOURS, capability, env_info, write  # noqa: E402
from variants import (ARTICLE, FOX, PAD, causal_mask, document, embedding, rand_weights, step,  # noqa: E402
                      tokenize)
from make_modern_references import rope_tables, rotate  # noqa: E402

RECIPE = {
    "decode": ("for t in range(T):  # per head and sentence\n"
               "    q_t, k_t, v_t = (x_t @ W or W(x_t))[head's columns]  # x_t = X[t:t+1]\n"
               "    q_t, k_t = rotate(q_t, cos[t:t+1], sin[t:t+1]), rotate(k_t, ...)  # --rope\n"
               "    K_cache = torch.cat([K_cache, k_t]); V_cache = torch.cat([V_cache, v_t])\n"
               "    K_cache, V_cache = K_cache[-W:], V_cache[-W:]  # --window W\n"
               "    s = (q_t @ K_cache.T).masked_fill(padding[t, :t+1], -torch.inf) / d**0.5\n"
               "    a = torch.softmax(s, dim=-1); z_t = a @ V_cache\n"
               "decode_check = torch.cat([z_1, ..., z_T])"),
    "online": ("for each row i, m = -inf; l = 0; O = zeros(1, d_v)\n"
               "  for each tile of B keys: S = scaled_scores[i:i+1, tile]\n"
               "    if (S == -inf).all(): skip\n"
               "    m_new = torch.maximum(m, S.max(dim=-1).values); c = torch.exp(m - m_new)\n"
               "    P = torch.exp(S - m_new); l = c * l + P.sum(dim=-1); O = c * O + P @ V[tile]\n"
               "    m = m_new\n"
               "  Z[i] = O / l"),
}


def setup(sentences, seed=123, vocab_size=50000, d_in=3, d_kq=2, d_v=4, heads=1,
          multihead="wrapper", init="rand", causal=False, kv_heads=None, window=0, rope=False,
          theta=10000.0, pairs="half"):
    """Per batch item and head: (x rows, projections of one row at its position, Q, K, V, mask, d)."""
    kv_heads = kv_heads or heads
    causal = causal or window > 0
    words, dictionary = tokenize(*sentences)
    T = max(len(w) for w in words)
    pad_id = None
    if any(len(w) < T for w in words):
        pad_id = len(dictionary)
        dictionary[PAD] = pad_id
    ids = [[dictionary[w] for w in ws] + [pad_id] * (T - len(ws)) for ws in words]
    X = embedding(seed, vocab_size, d_in, ids, padding_idx=pad_id)
    torch.manual_seed(seed)
    split = multihead == "split"
    hd = d_kq // heads if split else d_kq
    kvw = kv_heads * hd
    if split and init == "linear":
        layers = [torch.nn.Linear(d_in, w, bias=False) for w in (d_kq, kvw, kvw)]
        proj = [[lambda x, l=l: l(x).detach() for l in layers]]
    elif split:
        ws = (torch.rand(d_in, d_kq), torch.rand(d_in, kvw), torch.rand(d_in, kvw))
        proj = [[lambda x, w=w: x @ w for w in ws]]
    else:
        proj = [[lambda x, w=w: x @ w for w in rand_weights(d_in, d_kq, d_v)] for _ in range(heads)]
    cos, sin = rope_tables(T, hd, theta, pairs) if rope else (None, None)
    valid = torch.tensor(ids) != (pad_id if pad_id is not None else -1)
    items = []
    for b in range(len(ids)):
        mask = ~(valid[b][:, None] & valid[b][None, :])
        if causal:
            mask = mask | causal_mask(T).bool()
        if window:
            mask = mask | torch.tril(torch.ones(T, T), diagonal=-window).bool()
        for h in range(heads):
            p = proj[0] if split else proj[h]
            j = h // (heads // kv_heads)  # the K/V head that query head h reads
            qcols = slice(h * hd, (h + 1) * hd) if split else slice(None)
            kvcols = slice(j * hd, (j + 1) * hd) if split else slice(None)

            def one(x, at, p=p, qcols=qcols, kvcols=kvcols):
                q, k, v = p[0](x)[:, qcols], p[1](x)[:, kvcols], p[2](x)[:, kvcols]
                if rope:
                    q = rotate(q, cos[at], sin[at], pairs)
                    k = rotate(k, cos[at], sin[at], pairs)
                return q, k, v
            q, k, v = one(X[b], slice(None))
            items.append({"batch": b if len(ids) > 1 else None, "head": h if heads > 1 else None,
                          "x": X[b], "one": one, "q": q, "k": k, "v": v, "mask": mask, "d": hd,
                          "window": window})
    settings = {"sentences": list(sentences), "seed": seed, "vocab_size": vocab_size, "d_in": d_in,
                "d_kq": d_kq, "d_v": d_v, "heads": heads, "kv_heads": kv_heads,
                "multihead": multihead, "init": init, "causal": causal, "window": window,
                "rope": rope, "rope_theta": theta, "rope_pairs": pairs}
    return words, dictionary, ids, items, settings


def decode(it, zero):
    """The KV-cache loop of one head and sentence: [(step id, tensor)]."""
    T = it["x"].shape[0]
    K_cache, V_cache = it["k"][:0], it["v"][:0]
    out, zs = [], []
    for t in range(T):
        q_t, k_t, v_t = it["one"](it["x"][t:t + 1], slice(t, t + 1))
        K_cache, V_cache = torch.cat([K_cache, k_t]), torch.cat([V_cache, v_t])
        first = 0
        if it["window"]:
            first = max(0, t + 1 - it["window"])
            K_cache, V_cache = K_cache[-it["window"]:], V_cache[-it["window"]:]
        padding = it["mask"][t:t + 1, first:t + 1]
        s = (q_t @ K_cache.T).masked_fill(padding, -torch.inf) / it["d"] ** 0.5
        a = torch.softmax(s, dim=-1)
        if zero and bool(padding.all()):
            a = torch.zeros_like(a)
        z = a @ V_cache
        zs.append(z)
        n = t + 1
        out += [(f"decode_query_t{n}", q_t), (f"decode_key_t{n}", k_t), (f"decode_value_t{n}", v_t),
                (f"key_cache_t{n}", K_cache), (f"value_cache_t{n}", V_cache),
                (f"decode_scores_t{n}", s), (f"decode_weights_t{n}", a), (f"decode_context_t{n}", z)]
    return out + [("decode_check", torch.cat(zs))]


def online(it, B, zero):
    """FlashAttention's loop of one head and sentence: [(step id, tensor)]."""
    S = it["q"] @ it["k"].T
    S = S.masked_fill(it["mask"], -torch.inf) / it["d"] ** 0.5
    V = it["v"]
    T, Tk = S.shape
    b = min(B, Tk)
    tiles = math.ceil(Tk / b)
    M, C, L = (torch.empty(T, tiles) for _ in range(3))
    O_all, Z = torch.empty(T, V.shape[1]), torch.empty(T, V.shape[1])
    for i in range(T):
        m, l, o = torch.tensor([-torch.inf]), torch.tensor([0.0]), torch.zeros(1, V.shape[1])
        for n, j in enumerate(range(0, Tk, b)):
            St = S[i:i + 1, j:j + b]
            c = torch.tensor([1.0])
            if not bool(torch.isneginf(St).all()):
                m_new = torch.maximum(m, St.max(dim=-1).values)
                c = torch.exp(m - m_new)
                P = torch.exp(St - m_new[:, None])
                l = c * l + P.sum(dim=-1)
                o = c[:, None] * o + P @ V[j:j + b]
                m = m_new
            M[i, n], C[i, n], L[i, n] = m[0], c[0], l[0]
        O_all[i] = o[0]
        Z[i] = torch.zeros_like(o[0]) if (zero and float(l) == 0.0) else (o / l[:, None])[0]
    return [("online_max", M), ("online_rescale", C), ("online_sum", L),
            ("online_output", O_all), ("online_context", Z)]


def case(name, env, kind, sentences=(ARTICLE,), B=None, masked_rows="nan", **settings):
    words, dictionary, ids, items, s = setup(sentences, causal=kind == "decode" or
                                             settings.pop("causal", False), **settings)
    zero = masked_rows == "zero"
    step_list = []
    for it in items:
        named = decode(it, zero) if kind == "decode" else online(it, B, zero)
        step_list += [step(n, t, it["head"], it["batch"]) for n, t in named]
    s.update({"masked_rows": masked_rows, kind: True if kind == "decode" else B})
    return document(name, env, RECIPE[kind], s, dictionary, words, ids, step_list)


CASES = {
    "decode": dict(kind="decode"),
    "decode_fox": dict(kind="decode", sentences=(FOX,), seed=7, d_in=8, d_kq=4, d_v=5),
    "decode_heads2_wrapper": dict(kind="decode", heads=2),
    "decode_heads2_split": dict(kind="decode", heads=2, multihead="split", init="linear", d_kq=4,
                                d_v=4),
    "decode_batch_padded": dict(kind="decode", sentences=(ARTICLE, "eat dessert"),
                                masked_rows="zero"),
    "online_b2": dict(kind="online", B=2),
    "online_b1_causal": dict(kind="online", B=1, causal=True),
    "online_b4_causal_fox": dict(kind="online", B=4, causal=True, sentences=(FOX,), seed=7,
                                 d_in=8, d_kq=4, d_v=5),
    "online_one_tile": dict(kind="online", B=100),
    "online_heads2_split_causal": dict(kind="online", B=3, heads=2, multihead="split",
                                       init="linear", d_kq=4, d_v=4, causal=True),
    "online_heads2_wrapper": dict(kind="online", B=4, heads=2, sentences=(FOX,)),
    "online_batch_padded_nan": dict(kind="online", B=2,
                                    sentences=(ARTICLE, "eat dessert", "short life is sweet")),
    "online_batch_padded_causal_zero": dict(kind="online", B=2, causal=True, masked_rows="zero",
                                            sentences=(ARTICLE, "eat dessert")),
    # With issue 17's other variants: rotary embeddings, shared K/V heads and windows.
    "decode_rope_half": dict(kind="decode", rope=True, d_in=4, d_kq=4),
    "decode_rope_interleaved_split_heads2": dict(kind="decode", rope=True, pairs="interleaved",
                                                 heads=2, multihead="split", init="linear",
                                                 d_kq=8, d_v=8),
    "decode_gqa_4_2": dict(kind="decode", heads=4, kv_heads=2, multihead="split", init="linear",
                           d_kq=8, d_v=8),
    "decode_window_2": dict(kind="decode", window=2),
    "decode_window_rope_mqa_fox": dict(kind="decode", sentences=(FOX,), seed=7, d_in=8, heads=4,
                                       kv_heads=1, multihead="split", d_kq=8, d_v=8, window=3,
                                       rope=True),
    "decode_batch_window_zero": dict(kind="decode", sentences=(ARTICLE, "eat dessert"), window=3,
                                     masked_rows="zero"),
    "online_rope_half_b2": dict(kind="online", B=2, rope=True, d_in=4, d_kq=4),
    "online_mqa_4_1_causal_b3": dict(kind="online", B=3, heads=4, kv_heads=1, multihead="split",
                                     d_kq=8, d_v=8, causal=True),
    "online_window_2_b2": dict(kind="online", B=2, window=2),
    "online_window_rope_gqa_fox_b3": dict(kind="online", B=3, sentences=(FOX,), seed=7, d_in=8,
                                          heads=4, kv_heads=2, multihead="split", init="linear",
                                          d_kq=8, d_v=8, window=3, rope=True),
}


def main():
    flavour = "default" if os.environ.get("ATEN_CPU_CAPABILITY") == "default" else "avx2"
    if capability() != FLAVOURS[flavour]:
        sys.exit(f"expected CPU capability {FLAVOURS[flavour]!r} for {flavour}, got {capability()!r}")
    torch.set_num_threads(1)
    out = ROOT / "data" / "reference" / flavour
    for name, settings in CASES.items():
        write(out / f"variant_{name}.json", case(name, env_info(), **dict(settings)))
    if flavour == "avx2":
        subprocess.run([sys.executable, __file__], check=True,
                       env={**os.environ, "ATEN_CPU_CAPABILITY": "default"})


if __name__ == "__main__":
    main()
