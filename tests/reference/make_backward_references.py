"""The backward pass's references: data/reference/<flavour>/backward_<name>.json.

Each case runs a variant's forward pass as variants.py writes it, with the embedding table and the
weights as leaves that require grad (X = embed(ids), not detached), then loss.backward() on
L = out.sum() or ((out - target)**2).mean(), and stores every gradient autograd gives: of the
output, the context vectors, the attention weights, the values, the scaled scores (the softmax's
input), ω, the queries and keys, each weight (in its stored layout), X and the embedding table's
rows of the input's ids. With "lr": each weight W - lr * W.grad, and the loss of the forward pass
with them. Steps are stored as variants.py stores them ({"id", "head", "batch", "shape", "values",
"bits"}); "settings" as variants.py's, plus "loss", "lr" and "target" (a matrix).

Today's variants are make_modern_references.py's recipe: rotary embeddings ("rope", "rope_pairs",
"rope_theta") turn each head's Q and K, the split form's before the K/V heads are shared; grouped
K/V heads ("kv_heads" < "heads") are shared with repeat_interleave, whose backward sums each K/V
head's query heads (the per-head gradients are their shares, "grad_shared_keys" and
"grad_shared_values" the sums); a window ("window") masks the keys W or more tokens back too;
"decode" and "online_softmax" are settings of the tool only (its KV cache and online softmax
leave Z, and so every gradient, as they are). With a causal mask, the walkthrough's other way
(softmax, zero the masked weights, divide each row by its sum) is run backwards from the same
dL/dZ, and the gradients of its zeroed and unmasked weights and of ω are stored
("grad_zeroed_weights", "grad_unmasked_weights", "grad_omega_other_way").

Run with Debian's reference BLAS (as make_references.py arranges); it runs itself again with
ATEN_CPU_CAPABILITY=default for the "default" flavour. Not run by CI.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

REFERENCE_BLAS = "/usr/lib/x86_64-linux-gnu/blas"
if __name__ == "__main__" and os.environ.get("LD_LIBRARY_PATH") != REFERENCE_BLAS:
    sys.exit(subprocess.run(["/usr/bin/python3", __file__],
                            env={**os.environ, "LD_LIBRARY_PATH": REFERENCE_BLAS}).returncode)

import torch  # noqa: E402

from make_modern_references import rope_tables, rotate  # noqa: E402
from variants import ARTICLE, FOX, PAD, step, tokenize  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def keep(t):
    """t.retain_grad(), where autograd records t."""
    if t.requires_grad:
        t.retain_grad()


def attend(q, k, v, d, mask, zero_rows):
    """Z, and the tensors whose gradients are stored: scaled scores, ω, A."""
    omega = q @ k.transpose(-2, -1)
    keep(omega)
    scores = omega.masked_fill(mask.bool(), -torch.inf) if mask is not None else omega
    scaled = scores / d**0.5
    keep(scaled)
    a = torch.softmax(scaled, dim=-1)
    if zero_rows:
        a = torch.where(mask.bool().all(-1, keepdim=True), torch.zeros_like(a), a)
    keep(a)
    z = a @ v
    keep(z)
    return z, {"omega": omega, "scaled": scaled, "a": a, "z": z}


def other_way(omega, v, mask, d, dz):
    """The causal lesson's other way from ω, run backwards from dz: the gradients of its zeroed
    and unmasked weights and of ω (any leading dimensions: the split form's heads at once)."""
    omega = omega.detach().requires_grad_()
    unmasked = torch.softmax(omega / d**0.5, dim=-1)
    zeroed = unmasked * (1 - mask.float())
    renormalized = zeroed / zeroed.sum(dim=-1, keepdim=True)
    for x in (unmasked, zeroed):
        x.retain_grad()
    (renormalized @ v.detach()).backward(dz)
    return {"zeroed": zeroed.grad, "unmasked": unmasked.grad, "omega": omega.grad}


def forward(case, X, X2, W, mask, tables):
    """The final output, and every intermediate whose gradient is stored (per head)."""
    heads, split, init = case["heads"], case.get("multihead") == "split", case["init"]
    kv_heads = case.get("kv_heads", heads)
    zero = case.get("masked_rows") == "zero"
    pairs = case.get("rope_pairs", "half")

    def proj(x, w):
        if init == "rand":
            return x @ w
        if init == "rand_transposed":
            return w.matmul(x.T).T
        return torch.nn.functional.linear(x, w)

    def turn(x):
        return rotate(x, *tables, pairs) if tables else x

    t = {"heads": []}
    if not split:
        zs = []
        for h in range(heads):
            q, k, v = proj(X, W["w_query"][h]), proj(X2, W["w_key"][h]), proj(X2, W["w_value"][h])
            qr, kr = turn(q), turn(k)
            for x in (q, k, v, qr, kr):
                keep(x)
            z, parts = attend(qr, kr, v, q.shape[-1], mask, zero)
            zs.append(z)
            t["heads"].append({"q": q, "k": k, "v": v, "qr": qr, "kr": kr, **parts})
        out = zs[0] if heads == 1 else torch.cat(zs, dim=-1)
        if heads > 1:
            keep(out)
            t["concat"] = out
        return out, t
    T, T2, d_out = X.shape[0], X2.shape[0], W["w_query"][0].shape[0 if init != "rand" else 1]
    hd = d_out // heads
    q, k, v = proj(X, W["w_query"][0]), proj(X2, W["w_key"][0]), proj(X2, W["w_value"][0])
    for x in (q, k, v):
        keep(x)
    qh = q.view(T, heads, hd).transpose(0, 1)
    kh, vh = (x.view(T2, kv_heads, hd).transpose(0, 1) for x in (k, v))
    qr, kr = turn(qh), turn(kh)
    for x in (qh, kh, vh, qr, kr):
        keep(x)
    kx, vx = kr, vh
    if kv_heads < heads:  # each K/V head read by heads / kv_heads query heads
        kx, vx = (x.repeat_interleave(heads // kv_heads, dim=0) for x in (kr, vh))
        for x in (kx, vx):
            keep(x)
    z, parts = attend(qr, kx, vx, hd, mask, zero)
    concat = z.transpose(0, 1).contiguous().view(T, d_out)
    keep(concat)
    if init == "linear":
        out = torch.nn.functional.linear(concat, W["w_out"], W["b_out"])
    else:
        out = proj(concat, W["w_out"])
    keep(out)
    t.update(q=q, k=k, v=v, qh=qh, kh=kh, vh=vh, qr=qr, kr=kr, kx=kx, vx=vx, concat=concat,
             out=out, parts=parts)
    return out, t


def draw(case):
    """The embedding table and the weights, drawn as the tool draws them, all leaves."""
    torch.manual_seed(case["seed"])
    embed = torch.nn.Embedding(case["vocab_size"], case["d_in"], padding_idx=case.get("pad_id"))
    torch.manual_seed(case["seed"])
    d_in, init, heads = case["d_in"], case["init"], case["heads"]
    split = case.get("multihead") == "split"
    d_kq, d_v = (case["d_out"], case["d_out"]) if split else (case["d_kq"], case["d_v"])
    d_kv = case.get("kv_heads", heads) * (d_kq // heads) if split else None  # K's and V's width
    W = {"w_query": [], "w_key": [], "w_value": []}
    for _ in range(1 if split else heads):
        for name, d in (("w_query", d_kq), ("w_key", d_kv or d_kq), ("w_value", d_kv or d_v)):
            if init == "rand":
                w = torch.rand(d_in, d)
            elif init == "rand_transposed":
                w = torch.rand(d, d_in)
            else:
                w = torch.nn.Linear(d_in, d, bias=False).weight.detach().clone()
            W[name].append(w.requires_grad_())
    if split:
        if init == "linear":
            lin = torch.nn.Linear(d_kq, d_kq)
            W["w_out"] = lin.weight.detach().clone().requires_grad_()
            W["b_out"] = lin.bias.detach().clone().requires_grad_()
        else:
            W["w_out"] = torch.rand(d_kq, d_kq).requires_grad_()
    return embed, W


def batched(case, outs):
    """The items' final outputs as one tensor: one sentence's as forward made it, a batch's as
    (B, T, d_out). The split form's (W_o Zᵀ)ᵀ with rand_transposed is a transposed view, and a
    batch of them keeps that layout (each item's columns in turn in memory), as the batched
    product's transpose would: a sum reads a tensor in the order of its memory."""
    if len(outs) == 1:
        return outs[0]
    if case.get("multihead") == "split" and case["init"] == "rand_transposed":
        return torch.stack([o.transpose(-2, -1) for o in outs]).transpose(-2, -1)
    return torch.stack(outs)


def run(case):
    """The references' steps of one case."""
    sentences = case["sentences"]
    words, dictionary = tokenize(*sentences)
    cross = case.get("cross", False)
    batch = len(sentences) if not cross else 1
    T = max(len(ws) for ws in words[:batch])
    if any(len(ws) < T for ws in words[:batch]):
        dictionary[PAD] = case["pad_id"] = len(dictionary)
    pad = case.get("pad_id")
    ids = [[dictionary[w] for w in ws] + [pad] * (T - len(ws)) for ws in words[:batch]]
    if cross:
        ids.append([dictionary[w] for w in words[1]])
    embed, W = draw(case)
    flat = [i for item in ids for i in item]
    X_all = embed(torch.tensor(flat))
    keep(X_all)
    items = []
    for b in range(batch):
        X = X_all[b * T:(b + 1) * T]
        X2 = X_all[batch * T:] if cross else X
        mask = None
        if pad is not None:
            valid = torch.tensor(ids[b]) != pad
            mask = (~(valid[:, None] & valid[None, :])).float()
        if case["causal"] or case.get("window"):
            m = torch.triu(torch.ones(T, X2.shape[0]), diagonal=1)
            if case.get("window"):
                m = m + torch.tril(torch.ones(T, X2.shape[0]), diagonal=-case["window"])
            mask = m if mask is None else ((mask + m) > 0).float()
        items.append((X, X2, mask))
    tables = None
    if case.get("rope"):
        d_head = case["d_out"] // case["heads"] if case.get("multihead") == "split" else case["d_kq"]
        tables = rope_tables(T, d_head, case.get("rope_theta", 10000.0),
                             case.get("rope_pairs", "half"))
    outs, traces = [], []
    for X, X2, mask in items:
        out, t = forward(case, X, X2, W, mask, tables)
        outs.append(out)
        traces.append(t)
    out = batched(case, outs)
    target = torch.tensor(case["target"]).reshape(out.shape) if case["loss"] == "mse" else None
    loss = out.sum() if target is None else ((out - target) ** 2).mean()
    loss.backward()
    if batch > 1:
        batched_weight_grads(case, W, items, traces)
    if case["causal"] or case.get("window"):
        for (X, X2, mask), t in zip(items, traces):
            if case.get("multihead") == "split":
                p = t["parts"]
                t["other"] = other_way(p["omega"], t["vx"], mask, t["qh"].shape[-1],
                                       p["z"].grad)
            else:
                for hp in t["heads"]:
                    hp["other"] = other_way(hp["omega"], hp["v"], mask, hp["q"].shape[-1],
                                            hp["z"].grad)
    return collect(case, loss, traces, W, X_all, embed, flat, batch, T, items, target, words,
                   tables)


def batched_weight_grads(case, W, items, traces):
    """A batch's weight gradients as the batched product gives them, in place of the per-item
    graph's: each projection is run again on the (B, T, d) stack of the items' inputs, and
    backwards from the stack of the items' gradients at its output. X @ W and F.linear fold the
    batch into one product (every token's row in one sum); W.matmul(Xᵀ) multiplies item by item
    (bmm) unless Xᵀ's last stride is 1 (one column), and sum(dim=0) adds the items' products. The
    per-item graph instead adds each item's product to W.grad as autograd's engine reaches it."""
    init = case["init"]

    def proj(x, w, b=None):
        if init == "rand":
            return x @ w
        if init == "rand_transposed":
            return w.matmul(x.transpose(1, 2)).transpose(1, 2)
        return torch.nn.functional.linear(x, w, b)

    def regrad(ws, xs, gs):
        leaves = [w.detach().clone().requires_grad_() for w in ws]
        proj(torch.stack([x.detach() for x in xs]), *leaves).backward(torch.stack(gs))
        for w, leaf in zip(ws, leaves):
            w.grad = leaf.grad

    xs, x2s = [it[0] for it in items], [it[1] for it in items]
    if case.get("multihead") == "split":
        for name, inputs, key in (("w_query", xs, "q"), ("w_key", x2s, "k"), ("w_value", x2s, "v")):
            regrad([W[name][0]], inputs, [t[key].grad for t in traces])
        out_weights = [W["w_out"]] + ([W["b_out"]] if "b_out" in W else [])
        regrad(out_weights, [t["concat"] for t in traces], [t["out"].grad for t in traces])
        return
    for h in range(case["heads"]):
        for name, inputs, key in (("w_query", xs, "q"), ("w_key", x2s, "k"), ("w_value", x2s, "v")):
            regrad([W[name][h]], inputs, [t["heads"][h][key].grad for t in traces])


def collect(case, loss, traces, W, X_all, embed, flat, batch, T, items, target, words, tables):
    B = batch if batch > 1 else None
    split = case.get("multihead") == "split"
    heads = case["heads"]
    grouped = split and case.get("kv_heads", heads) < heads
    rope = tables is not None
    H = (lambda h: h) if heads > 1 else (lambda h: None)
    out = [step("loss", loss.reshape(1, 1))]
    for b, t in enumerate(traces):
        bb = b if B else None
        if split:
            out.append(step("grad_output", t["out"].grad, batch=bb))
        if heads > 1:
            out.append(step("grad_context_concat", t["concat"].grad, batch=bb))
        for h in range(heads):
            if split:
                p = t["parts"]
                zs, ag, sg, og = (p[n].grad[h] for n in ("z", "a", "scaled", "omega"))
                q, qr = t["qh"].grad[h], t["qr"].grad[h]
                k, kr = t["kh"].grad[h] if not grouped else None, t["kx"].grad[h]
                v = t["vx"].grad[h]
                other = {n: g[h] for n, g in t["other"].items()} if "other" in t else None
            else:
                hp = t["heads"][h]
                zs, ag, sg, og = (hp[n].grad for n in ("z", "a", "scaled", "omega"))
                q, qr, k, kr, v = (hp[n].grad for n in ("q", "qr", "k", "kr", "v"))
                other = hp.get("other")
            out += [step("grad_context_vectors", zs, H(h), bb),
                    step("grad_attention_weights", ag, H(h), bb),
                    step("grad_values", v, H(h), bb),
                    step("grad_scaled_scores", sg, H(h), bb),
                    step("grad_omega", og, H(h), bb),
                    step("grad_queries", q, H(h), bb)]
            if rope:
                out += [step("grad_rotated_queries", qr, H(h), bb),
                        step("grad_rotated_keys", kr, H(h), bb)]
                if not grouped:
                    out.append(step("grad_keys", k, H(h), bb))
            else:
                out.append(step("grad_keys", kr, H(h), bb))
            if other:
                out += [step("grad_zeroed_weights", other["zeroed"], H(h), bb),
                        step("grad_unmasked_weights", other["unmasked"], H(h), bb),
                        step("grad_omega_other_way", other["omega"], H(h), bb)]
        if grouped:  # each K/V head's gradients, (T, kv_heads * d_head)
            def whole(x):
                return x.transpose(0, 1).reshape(x.shape[1], -1)
            out += [step("grad_shared_keys", whole(t["kr"].grad), batch=bb),
                    step("grad_shared_values", whole(t["vh"].grad), batch=bb)]
            if rope:
                out.append(step("grad_keys", t["k"].grad, batch=bb))
    nw = len(W["w_query"])
    for h in range(nw):
        hh = h if nw > 1 else None
        out += [step("grad_w_query", W["w_query"][h].grad, hh),
                step("grad_w_key", W["w_key"][h].grad, hh),
                step("grad_w_value", W["w_value"][h].grad, hh)]
    if split:
        out.append(step("grad_w_out", W["w_out"].grad))
        if "b_out" in W:
            out.append(step("grad_b_out", W["b_out"].grad))
    for b in range(batch):
        out.append(step("grad_embeddings", X_all.grad[b * T:(b + 1) * T], batch=b if B else None))
    if case.get("cross"):
        out.append(step("grad_embeddings_2", X_all.grad[batch * T:]))
    used = sorted(set(flat))
    out.append(step("grad_embedding_table", embed.weight.grad[used]))
    if case.get("lr"):
        out += sgd(case, W, items, target, tables)
    return out


def sgd(case, W, items, target, tables):
    lr, out = case["lr"], []
    with torch.no_grad():
        new = {k: ([w - lr * w.grad for w in v] if isinstance(v, list) else v - lr * v.grad)
               for k, v in W.items()}
    nw = len(W["w_query"])
    for h in range(nw):
        hh = h if nw > 1 else None
        out += [step("step_w_query", new["w_query"][h], hh), step("step_w_key", new["w_key"][h], hh),
                step("step_w_value", new["w_value"][h], hh)]
    if "w_out" in new:
        out.append(step("step_w_out", new["w_out"]))
    if "b_out" in new:
        out.append(step("step_b_out", new["b_out"]))
    with torch.no_grad():
        outs = [forward(case, X.detach(), X2.detach(), new, m, tables)[0] for X, X2, m in items]
        o = batched(case, outs)
        loss = o.sum() if target is None else ((o - target) ** 2).mean()
    out.append(step("loss_after_step", loss.reshape(1, 1)))
    return out


def settings(case):
    s = dict(case)
    if s.pop("cross", False):
        s["queries_from"], s["keys_values_from"] = 0, 1
    elif len(s["sentences"]) == 1:
        s["sentence"] = s.pop("sentences")[0]
    return s


NINE = "the cat saw the dog and the cat ran"
TEN = "one two three four five six seven eight nine ten"
ELEVEN = "a b a c b a d e a f g"
TWELVE = "alpha beta gamma delta eps zeta eta theta iota kappa lam mu"
TWENTY = " ".join(f"w{i % 7}" for i in range(20))
FORTY = " ".join(f"t{(i * 7) % 23}" for i in range(40))

CASES = {
    "article": {"sentences": [ARTICLE], "seed": 123, "vocab_size": 50000, "d_in": 3, "d_kq": 2,
                "d_v": 4, "heads": 1, "init": "rand", "causal": False, "loss": "sum", "lr": 0.01},
    "repeated_mse": {"sentences": ["the cat sat on the mat the end"], "seed": 42,
                     "vocab_size": 100, "d_in": 5, "d_kq": 3, "d_v": 4, "heads": 1,
                     "init": "rand", "causal": False, "loss": "mse", "lr": 0.05,
                     "target": [[((i * 7 + j * 3) % 11 - 5) / 4 for j in range(4)]
                                for i in range(8)]},
    "causal_fox": {"sentences": [FOX], "seed": 7, "vocab_size": 50000, "d_in": 8, "d_kq": 4,
                   "d_v": 5, "heads": 1, "init": "rand", "causal": True, "loss": "sum"},
    "heads2_wrapper": {"sentences": [ARTICLE], "seed": 123, "vocab_size": 50000, "d_in": 3,
                       "d_kq": 2, "d_v": 4, "heads": 2, "multihead": "wrapper", "init": "rand",
                       "causal": False, "loss": "sum", "lr": 0.01},
    "heads2_split": {"sentences": [ARTICLE], "seed": 123, "vocab_size": 50000, "d_in": 3,
                     "d_out": 4, "heads": 2, "multihead": "split", "init": "linear",
                     "causal": False, "loss": "sum", "lr": 0.1},
    "heads2_split_causal_rand": {"sentences": [ARTICLE], "seed": 123, "vocab_size": 50000,
                                 "d_in": 3, "d_out": 4, "heads": 2, "multihead": "split",
                                 "init": "rand", "causal": True, "loss": "sum"},
    "cross": {"sentences": [ARTICLE, FOX], "cross": True, "seed": 123, "vocab_size": 50000,
              "d_in": 3, "d_kq": 2, "d_v": 4, "heads": 1, "init": "rand", "causal": True,
              "loss": "sum"},
    "init_linear_mse": {"sentences": [ARTICLE], "seed": 123, "vocab_size": 50000, "d_in": 3,
                        "d_kq": 2, "d_v": 4, "heads": 1, "init": "linear", "causal": False,
                        "loss": "mse", "target": [[0.5 * ((i + j) % 3) - 0.5 for j in range(4)]
                                                  for i in range(6)]},
    "init_rand_transposed": {"sentences": [ARTICLE], "seed": 123, "vocab_size": 6, "d_in": 16,
                             "d_kq": 24, "d_v": 28, "heads": 1, "init": "rand_transposed",
                             "causal": False, "loss": "sum"},
    "batch_padded_zero": {"sentences": [ARTICLE, "eat dessert", "short life is sweet"],
                          "seed": 123, "vocab_size": 50000, "d_in": 3, "d_kq": 2, "d_v": 4,
                          "heads": 1, "init": "rand", "causal": False, "masked_rows": "zero",
                          "loss": "sum"},
    "batch_padded_nan_causal": {"sentences": [ARTICLE, "eat dessert", "short life is sweet"],
                                "seed": 123, "vocab_size": 50000, "d_in": 3, "d_kq": 2, "d_v": 4,
                                "heads": 1, "init": "rand", "causal": True, "masked_rows": "nan",
                                "loss": "sum"},
    "split_one_head_batch": {"sentences": [NINE, "eat dessert"], "seed": 4, "vocab_size": 30,
                             "d_in": 3, "d_out": 2, "heads": 1, "multihead": "split",
                             "init": "rand", "causal": False, "loss": "sum", "lr": 0.05},
    # b_o's gradient, a sum over the rows of dL/d out in ATen's order for its width: columns in
    # groups of 4 (under 8 columns) or 32, and the others, over 16 rows and more.
    "bias_t20_d6_mse": {"sentences": [TWENTY], "seed": 8, "vocab_size": 10, "d_in": 5,
                        "d_out": 6, "heads": 2, "multihead": "split", "init": "linear",
                        "causal": False, "loss": "mse", "lr": 0.01,
                        "target": [[((i * 3 + j * 5) % 7 - 3) / 2 for j in range(6)]
                                   for i in range(20)]},
    "bias_t20_d12_mse": {"sentences": [TWENTY], "seed": 8, "vocab_size": 10, "d_in": 5,
                         "d_out": 12, "heads": 3, "multihead": "split", "init": "linear",
                         "causal": True, "loss": "mse",
                         "target": [[((i * 3 + j * 5) % 7 - 3) / 2 for j in range(12)]
                                    for i in range(20)]},
    "bias_t20_d40_mse": {"sentences": [TWENTY], "seed": 8, "vocab_size": 10, "d_in": 5,
                         "d_out": 40, "heads": 2, "multihead": "split", "init": "linear",
                         "causal": False, "loss": "mse",
                         "target": [[((i * 3 + j * 5) % 7 - 3) / 2 for j in range(40)]
                                    for i in range(20)]},
    "bias_batch_d4_mse": {"sentences": [NINE, "eat dessert"], "seed": 8, "vocab_size": 30,
                          "d_in": 5, "d_out": 4, "heads": 2, "multihead": "split",
                          "init": "linear", "causal": False, "masked_rows": "zero",
                          "loss": "mse",
                          "target": [[((i * 3 + j * 5) % 7 - 3) / 2 for j in range(4)]
                                     for i in range(18)]},
    # Rows of more than 8 keys (the softmax's backward adds its row sum in 8 lanes, fused in
    # the AVX2 kernel), up to 40.
    "long_t12": {"sentences": [TWELVE], "seed": 3, "vocab_size": 20, "d_in": 4, "d_kq": 3,
                 "d_v": 5, "heads": 1, "init": "rand", "causal": False, "loss": "sum",
                 "lr": 0.01},
    "long_t20_wrapper2_mse": {"sentences": [TWENTY], "seed": 99, "vocab_size": 10, "d_in": 9,
                              "d_kq": 16, "d_v": 11, "heads": 2, "multihead": "wrapper",
                              "init": "rand", "causal": False, "loss": "mse", "lr": 0.001,
                              "target": [[((i * 5 + j * 3) % 13 - 6) / 3 for j in range(22)]
                                         for i in range(20)]},
    "long_t40_split_causal_linear": {"sentences": [FORTY], "seed": 5, "vocab_size": 50,
                                     "d_in": 6, "d_out": 8, "heads": 2, "multihead": "split",
                                     "init": "linear", "causal": True, "loss": "sum",
                                     "lr": 0.01},
    # A sliding window (causal, so the other way too), the KV cache, the online softmax.
    "window_3_fox": {"sentences": [FOX], "seed": 7, "vocab_size": 50000, "d_in": 8, "d_kq": 4,
                     "d_v": 5, "heads": 1, "init": "rand", "causal": True, "window": 3,
                     "loss": "sum", "lr": 0.01},
    "window_2_batch_zero_split": {"sentences": [NINE, "eat dessert", "short life is sweet"],
                                  "seed": 9, "vocab_size": 30, "d_in": 5, "d_out": 4, "heads": 2,
                                  "multihead": "split", "init": "linear", "causal": True,
                                  "window": 2, "masked_rows": "zero", "loss": "sum"},
    "decode_t10": {"sentences": [TEN], "seed": 3, "vocab_size": 20, "d_in": 4, "d_kq": 3,
                   "d_v": 5, "heads": 1, "init": "rand", "causal": True, "decode": True,
                   "loss": "sum", "lr": 0.01},
    "online_b3_t11_wrapper2": {"sentences": [ELEVEN], "seed": 4, "vocab_size": 20, "d_in": 4,
                               "d_kq": 3, "d_v": 2, "heads": 2, "multihead": "wrapper",
                               "init": "rand", "causal": False, "online_softmax": 3,
                               "loss": "sum"},
    # Rotary embeddings in both pairings, grouped K/V heads (N < H, N = 1), and together.
    "rope_half_t10": {"sentences": [TEN], "seed": 5, "vocab_size": 20, "d_in": 8, "d_kq": 8,
                      "d_v": 6, "heads": 1, "init": "rand", "causal": False, "rope": True,
                      "rope_pairs": "half", "rope_theta": 10000.0, "loss": "sum", "lr": 0.01},
    "rope_interleaved_split_causal": {"sentences": [FOX], "seed": 7, "vocab_size": 50000,
                                      "d_in": 8, "d_out": 8, "heads": 2, "multihead": "split",
                                      "init": "linear", "causal": True, "rope": True,
                                      "rope_pairs": "interleaved", "rope_theta": 100.0,
                                      "loss": "sum", "lr": 0.05},
    "rope_interleaved_wrapper2_mse": {"sentences": [ARTICLE], "seed": 123, "vocab_size": 50000,
                                      "d_in": 3, "d_kq": 4, "d_v": 4, "heads": 2,
                                      "multihead": "wrapper", "init": "rand", "causal": False,
                                      "rope": True, "rope_pairs": "interleaved",
                                      "rope_theta": 10000.0, "loss": "mse",
                                      "target": [[0.25 * ((i + 2 * j) % 5) - 0.5 for j in range(8)]
                                                 for i in range(6)]},
    "gqa_4_2_linear": {"sentences": [NINE], "seed": 9, "vocab_size": 30, "d_in": 5, "d_out": 8,
                       "heads": 4, "kv_heads": 2, "multihead": "split", "init": "linear",
                       "causal": False, "loss": "sum", "lr": 0.05},
    "mqa_4_1_rand_causal": {"sentences": [ARTICLE], "seed": 123, "vocab_size": 50000, "d_in": 3,
                            "d_out": 8, "heads": 4, "kv_heads": 1, "multihead": "split",
                            "init": "rand", "causal": True, "loss": "sum"},
    "gqa_6_3_rand_transposed_cross": {"sentences": [ARTICLE, FOX], "cross": True, "seed": 11,
                                      "vocab_size": 50000, "d_in": 5, "d_out": 12, "heads": 6,
                                      "kv_heads": 3, "multihead": "split",
                                      "init": "rand_transposed", "causal": False,
                                      "loss": "sum"},
    # The split form's output with rand_transposed, (W_o Zᵀ)ᵀ, is a transposed view: its sum
    # (and the mse's) reads the product's memory, column by column of out.
    "split_rand_transposed_w2": {"sentences": ["w0 w1"], "seed": 123, "vocab_size": 50000,
                                 "d_in": 3, "d_out": 8, "heads": 1, "multihead": "split",
                                 "init": "rand_transposed", "causal": False, "loss": "sum",
                                 "lr": 0.05},
    "split_rand_transposed_batch_mse": {"sentences": [NINE, "eat dessert", "short life is sweet"],
                                        "seed": 17, "vocab_size": 30, "d_in": 5, "d_out": 12,
                                        "heads": 3, "multihead": "split",
                                        "init": "rand_transposed", "causal": True,
                                        "masked_rows": "zero", "loss": "mse", "lr": 0.05,
                                        "target": [[((i * 5 + j * 7) % 9 - 4) / 3
                                                    for j in range(12)] for i in range(27)]},
    # A batch with rand_transposed, W.matmul(Xᵀ): the items' products added by sum(dim=0), over
    # 3 items and over 18 (more than the sum's first block of 16), and the one-column fold (d_in 1).
    "rand_transposed_batch_wrapper2": {"sentences": [ARTICLE, FOX, "eat dessert"], "seed": 21,
                                       "vocab_size": 50000, "d_in": 5, "d_kq": 3, "d_v": 4,
                                       "heads": 2, "multihead": "wrapper",
                                       "init": "rand_transposed", "causal": False,
                                       "loss": "sum", "lr": 0.1},
    "rand_transposed_batch_18": {"sentences": [" ".join(f"w{(3 * i + j) % 11}"
                                                        for j in range(1 + i % 4))
                                               for i in range(18)],
                                 "seed": 5, "vocab_size": 40, "d_in": 6, "d_kq": 3, "d_v": 5,
                                 "heads": 1, "init": "rand_transposed", "causal": True,
                                 "loss": "sum", "lr": 0.05},
    "rand_transposed_batch_d_in1": {"sentences": [ARTICLE, "eat dessert", "short life"],
                                    "seed": 8, "vocab_size": 50000, "d_in": 1, "d_out": 4,
                                    "heads": 2, "multihead": "split", "init": "rand_transposed",
                                    "causal": False, "loss": "sum", "lr": 0.05},
    "gqa_rope_window_t12": {"sentences": [TWELVE], "seed": 3, "vocab_size": 20, "d_in": 6,
                            "d_out": 8, "heads": 4, "kv_heads": 2, "multihead": "split",
                            "init": "linear", "causal": True, "window": 3, "rope": True,
                            "rope_pairs": "half", "rope_theta": 10000.0, "loss": "sum",
                            "lr": 0.01},
    "mqa_rope_batch_online": {"sentences": [ARTICLE, "eat dessert"], "seed": 123,
                              "vocab_size": 50000, "d_in": 3, "d_out": 8, "heads": 2,
                              "kv_heads": 1, "multihead": "split", "init": "linear",
                              "causal": False, "rope": True, "rope_pairs": "interleaved",
                              "rope_theta": 10000.0, "online_softmax": 2, "loss": "sum"},
}


def main():
    flavour = "default" if os.environ.get("ATEN_CPU_CAPABILITY") == "default" else "avx2"
    out_dir = ROOT / "data" / "reference" / flavour
    for name, case in CASES.items():
        case = json.loads(json.dumps(case))
        steps = run(case)
        doc = {"case": name, "env": {"torch_version": torch.__version__, "flavour": flavour},
               "settings": settings(case), "steps": steps}
        (out_dir / f"backward_{name}.json").write_text(json.dumps(doc, ensure_ascii=False) + "\n")
        print(f"{flavour}: backward_{name}.json, {len(steps)} steps")
    if flavour == "avx2":
        subprocess.run([sys.executable, __file__], check=True,
                       env={**os.environ, "ATEN_CPU_CAPABILITY": "default"})


if __name__ == "__main__":
    main()
