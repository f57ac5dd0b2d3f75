"""The backward pass's references: data/reference/<flavour>/backward_<name>.json.

Each case runs a variant's forward pass as variants.py writes it, with the embedding table and the
weights as leaves that require grad (X = embed(ids), not detached), then loss.backward() on
L = out.sum() or ((out - target)**2).mean(), and stores every gradient autograd gives: of the
output, the context vectors, the attention weights, the values, the scaled scores (the softmax's
input), ω, the queries and keys, each weight (in its stored layout), X and the embedding table's
rows of the input's ids. With "lr": each weight W - lr * W.grad, and the loss of the forward pass
with them. Steps are stored as variants.py stores them ({"id", "head", "batch", "shape", "values",
"bits"}); "settings" as variants.py's, plus "loss", "lr" and "target" (a matrix).

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

from variants import ARTICLE, FOX, PAD, causal_mask, matrix, step, tokenize  # noqa: E402

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


def forward(case, X, X2, W, mask):
    """The final output, and every intermediate whose gradient is stored (per head)."""
    heads, split, init = case["heads"], case.get("multihead") == "split", case["init"]
    zero = case.get("masked_rows") == "zero"

    def proj(x, w):
        if init == "rand":
            return x @ w
        if init == "rand_transposed":
            return w.matmul(x.T).T
        return torch.nn.functional.linear(x, w)

    t = {"heads": []}
    if not split:
        zs = []
        for h in range(heads):
            q, k, v = proj(X, W["w_query"][h]), proj(X2, W["w_key"][h]), proj(X2, W["w_value"][h])
            for x in (q, k, v):
                keep(x)
            z, parts = attend(q, k, v, q.shape[-1], mask, zero)
            zs.append(z)
            t["heads"].append({"q": q, "k": k, "v": v, **parts})
        out = zs[0] if heads == 1 else torch.cat(zs, dim=-1)
        if heads > 1:
            keep(out)
            t["concat"] = out
        return out, t
    T, d_out = X.shape[0], W["w_query"][0].shape[0 if init != "rand" else 1]
    hd = d_out // heads
    q, k, v = proj(X, W["w_query"][0]), proj(X2, W["w_key"][0]), proj(X2, W["w_value"][0])
    for x in (q, k, v):
        keep(x)
    qh, kh, vh = (x.view(T, heads, hd).transpose(0, 1) for x in (q, k, v))
    for x in (qh, kh, vh):
        keep(x)
    z, parts = attend(qh, kh, vh, hd, mask, zero)
    concat = z.transpose(0, 1).contiguous().view(T, d_out)
    keep(concat)
    if init == "linear":
        out = torch.nn.functional.linear(concat, W["w_out"], W["b_out"])
    else:
        out = concat @ W["w_out"]
    keep(out)
    t.update(q=q, k=k, v=v, qh=qh, kh=kh, vh=vh, concat=concat, out=out, parts=parts)
    return out, t


def draw(case):
    """The embedding table and the weights, drawn as the tool draws them, all leaves."""
    torch.manual_seed(case["seed"])
    embed = torch.nn.Embedding(case["vocab_size"], case["d_in"], padding_idx=case.get("pad_id"))
    torch.manual_seed(case["seed"])
    d_in, init, heads = case["d_in"], case["init"], case["heads"]
    split = case.get("multihead") == "split"
    d_kq, d_v = (case["d_out"], case["d_out"]) if split else (case["d_kq"], case["d_v"])
    W = {"w_query": [], "w_key": [], "w_value": []}
    for _ in range(1 if split else heads):
        for name, d in (("w_query", d_kq), ("w_key", d_kq), ("w_value", d_v)):
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
        if case["causal"]:
            m = torch.triu(torch.ones(T, X2.shape[0]), diagonal=1)
            mask = m if mask is None else ((mask + m) > 0).float()
        items.append((X, X2, mask))
    outs, traces = [], []
    for X, X2, mask in items:
        out, t = forward(case, X, X2, W, mask)
        outs.append(out)
        traces.append(t)
    out = torch.stack(outs)
    target = torch.tensor(case["target"]).reshape(out.shape) if case["loss"] == "mse" else None
    loss = out.sum() if target is None else ((out - target) ** 2).mean()
    loss.backward()
    return collect(case, loss, traces, W, X_all, embed, flat, batch, T, items, target, words)


def collect(case, loss, traces, W, X_all, embed, flat, batch, T, items, target, words):
    B = batch if batch > 1 else None
    split = case.get("multihead") == "split"
    heads = case["heads"]
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
                p = {k: v[h] for k, v in t["parts"].items()}
                q, k, v = t["qh"].grad[h], t["kh"].grad[h], t["vh"].grad[h]
            else:
                hp = t["heads"][h]
                p = {"z": hp["z"], "a": hp["a"], "scaled": hp["scaled"], "omega": hp["omega"]}
                p = {k: v for k, v in p.items()}
                q, k, v = hp["q"].grad, hp["k"].grad, hp["v"].grad
                p = {k2: v2 for k2, v2 in p.items()}
            g = (lambda x: x.grad if not split else x)
            if split:
                zs = t["parts"]["z"].grad[h]; ag = t["parts"]["a"].grad[h]
                sg = t["parts"]["scaled"].grad[h]; og = t["parts"]["omega"].grad[h]
            else:
                zs, ag, sg, og = p["z"].grad, p["a"].grad, p["scaled"].grad, p["omega"].grad
            out += [step("grad_context_vectors", zs, H(h), bb),
                    step("grad_attention_weights", ag, H(h), bb),
                    step("grad_values", v, H(h), bb),
                    step("grad_scaled_scores", sg, H(h), bb),
                    step("grad_omega", og, H(h), bb),
                    step("grad_queries", q, H(h), bb),
                    step("grad_keys", k, H(h), bb)]
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
        out += sgd(case, W, items, target)
    return out


def sgd(case, W, items, target):
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
        outs = [forward(case, X.detach(), X2.detach(), new, m)[0] for X, X2, m in items]
        o = torch.stack(outs)
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
