"""The variant attention cases of make_references.py: data/reference/<flavour>/variant_<name>.json.

Causal attention (masked before the softmax, and the zero-then-renormalise way), the walkthrough's
MultiHeadAttentionWrapper, the course code's split-head MultiHeadAttention (with and without the
causal mask, and with torch.rand weights and an unbiased W_o), cross-attention between two sentences
(also causal, with a rectangular mask), nn.Linear weights, the earlier walkthrough's transposed
torch.rand weights, and a padded batch whose fully masked rows are nan or zeros (also causal).

Each file: {"case", "env", "recipe": {"text"}, "settings", "dictionary", "sentences" (the words of each
sentence), "token_ids" (one list per sentence, padded in the batch cases), "steps"}. Every step is a 2-D
matrix {"id", "head", "batch", "shape", "values", "bits"}: a 1-D bias is stored as [1, n], and a
[H, ...] or [B, ...] tensor as one step per head or batch item (0-based; null when not per head or
batch). Non-finite values are the strings "nan", "inf" and "-inf" in "values"; "bits" stay exact.
"""
import math

import numpy as np
import torch

ARTICLE = "Life is short, eat dessert first"
FOX = "The quick brown fox jumps over the lazy dog"
DEFAULTS = {"sentence": ARTICLE, "seed": 123, "vocab_size": 50000, "d_in": 3, "d_kq": 2, "d_v": 4}
PAD = "<pad>"

TOKENIZE = ("words = sentence.replace(',', '').split()  # per sentence\n"
            "dictionary = {w: i for i, w in enumerate(sorted(set(all words of all sentences)))}")
EMBED = ("torch.manual_seed(seed); embed = torch.nn.Embedding(vocab_size, d_in)\n"
         "X = embed(torch.tensor(token_ids)).detach()")
RAND_WEIGHTS = ("torch.manual_seed(seed); W_query = torch.rand(d_in, d_kq); "
                "W_key = torch.rand(d_in, d_kq); W_value = torch.rand(d_in, d_v)")
PROJECT = "queries = X @ W_query; keys = X @ W_key; values = X @ W_value"
ATTEND = ("omega = queries @ keys.T; scaled_scores = omega / d_kq**0.5\n"
          "attention_weights = torch.softmax(scaled_scores, dim=-1); "
          "context_vectors = attention_weights @ values")
CAUSAL = ("omega = queries @ keys.T; T = omega.shape[0]\n"
          "mask = torch.triu(torch.ones(T, T), diagonal=1)\n"
          "masked_omega = omega.masked_fill(mask.bool(), -torch.inf)\n"
          "scaled_scores = masked_omega / d_kq**0.5; "
          "attention_weights = torch.softmax(scaled_scores, dim=-1)\n"
          "unmasked_weights = torch.softmax(omega / d_kq**0.5, dim=-1)\n"
          "zeroed_weights = unmasked_weights * torch.tril(torch.ones(T, T))\n"
          "renormalized_weights = zeroed_weights / zeroed_weights.sum(dim=-1, keepdim=True)\n"
          "context_vectors = attention_weights @ values")


# --- serialisation -----------------------------------------------------------------------------

def json_value(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def matrix(t):
    """{"shape", "values", "bits"} of a 2-D float32 matrix (a 1-D tensor becomes [1, n])."""
    t = t.detach().to(torch.float32).contiguous()
    if t.dim() == 1:
        t = t.reshape(1, -1)
    assert t.dim() == 2, t.shape
    bits = t.numpy().view(np.uint32)
    return {"shape": list(t.shape),
            "values": [[json_value(x) for x in row] for row in t.tolist()],
            "bits": [[f"{b:08x}" for b in row] for row in bits.tolist()]}


def step(step_id, t, head=None, batch=None):
    return {"id": step_id, "head": head, "batch": batch, **matrix(t)}


def steps(named, head=None, batch=None):
    return [step(name, t, head, batch) for name, t in named]


def scalar(t):
    """{"values", "bits"} of a 0-D float32 tensor."""
    t = t.detach().to(torch.float32).reshape(1)
    return {"values": json_value(t.item()), "bits": f"{int(t.numpy().view(np.uint32)[0]):08x}"}


def document(name, env, recipe, settings, dictionary, sentences, token_ids, step_list, **extra):
    return {"case": name, "env": env, "recipe": {"text": recipe}, "settings": settings,
            "dictionary": dictionary, "sentences": sentences, "token_ids": token_ids,
            "steps": step_list, **extra}


# --- shared pieces -----------------------------------------------------------------------------

def tokenize(*sentences):
    """(words of each sentence, dictionary over all of them)."""
    words = [s.replace(",", "").split() for s in sentences]
    dictionary = {w: i for i, w in enumerate(sorted({w for ws in words for w in ws}))}
    return words, dictionary


def embedding(seed, vocab_size, d_in, ids, padding_idx=None):
    torch.manual_seed(seed)
    embed = torch.nn.Embedding(vocab_size, d_in, padding_idx=padding_idx)
    return embed(torch.tensor(ids)).detach()


def rand_weights(d_in, d_kq, d_v):
    """W_query, W_key, W_value drawn with torch.rand (the generator seeded by the caller)."""
    return torch.rand(d_in, d_kq), torch.rand(d_in, d_kq), torch.rand(d_in, d_v)


def attend(queries, keys, values, d, mask=None, zero_masked_rows=False, both_ways=False):
    """[(step id, tensor)] from omega to context_vectors for 2-D or batched [N, T, .] inputs."""
    omega = queries @ keys.transpose(-2, -1)
    out = [("omega", omega)]
    scores = omega
    if mask is not None:
        scores = omega.masked_fill(mask.bool(), -torch.inf)
        out += [("mask", mask.float()), ("masked_omega", scores)]
    scaled = scores / d**0.5
    attn = torch.softmax(scaled, dim=-1)
    if zero_masked_rows:
        attn = torch.where(mask.all(-1, keepdim=True), torch.zeros_like(attn), attn)
    out += [("scaled_scores", scaled), ("attention_weights", attn)]
    if both_ways:
        # 1 - mask: the causal mask's tril(ones(T, T)), or that of any other mask
        unmasked = torch.softmax(omega / d**0.5, dim=-1)
        zeroed = unmasked * (1 - mask.float())
        renormalized = zeroed / zeroed.sum(dim=-1, keepdim=True)
        out += [("unmasked_weights", unmasked), ("zeroed_weights", zeroed),
                ("renormalized_weights", renormalized)]
    return out + [("context_vectors", attn @ values)]


def pick(named, i):
    """Item i of every [N, ...] tensor of named; 2-D tensors (a shared mask) as they are."""
    return [(name, t[i] if t.dim() == 3 else t) for name, t in named]


def causal_mask(T):
    return torch.triu(torch.ones(T, T), diagonal=1)


# --- the cases ---------------------------------------------------------------------------------

def single_head(name, env, sentence, seed, vocab_size, d_in, d_kq, d_v, causal=False):
    """Cases causal and causal_fox: one head, torch.rand weights."""
    (words,), dictionary = tokenize(sentence)
    ids = [dictionary[w] for w in words]
    X = embedding(seed, vocab_size, d_in, ids)
    torch.manual_seed(seed)
    W_query, W_key, W_value = rand_weights(d_in, d_kq, d_v)
    queries, keys, values = X @ W_query, X @ W_key, X @ W_value
    mask = causal_mask(len(ids)) if causal else None
    named = [("embeddings", X), ("w_query", W_query), ("w_key", W_key), ("w_value", W_value),
             ("queries", queries), ("keys", keys), ("values", values)]
    named += attend(queries, keys, values, d_kq, mask, both_ways=causal)
    settings = {"sentence": sentence, "seed": seed, "vocab_size": vocab_size, "d_in": d_in,
                "d_kq": d_kq, "d_v": d_v, "heads": 1, "causal": causal, "init": "rand"}
    recipe = "\n".join([TOKENIZE, EMBED, RAND_WEIGHTS, PROJECT, CAUSAL if causal else ATTEND])
    return document(name, env, recipe, settings, dictionary, [words], [ids], steps(named))


def wrapper(name, env, heads):
    """The walkthrough's MultiHeadAttentionWrapper: `heads` single-head modules, outputs concatenated."""
    s = DEFAULTS
    (words,), dictionary = tokenize(s["sentence"])
    ids = [dictionary[w] for w in words]
    X = embedding(s["seed"], s["vocab_size"], s["d_in"], ids)
    torch.manual_seed(s["seed"])
    weights = [rand_weights(s["d_in"], s["d_kq"], s["d_v"]) for _ in range(heads)]
    step_list = steps([("embeddings", X)])
    contexts = []
    for h, (W_query, W_key, W_value) in enumerate(weights):
        queries, keys, values = X @ W_query, X @ W_key, X @ W_value
        named = [("w_query", W_query), ("w_key", W_key), ("w_value", W_value),
                 ("queries", queries), ("keys", keys), ("values", values)]
        named += attend(queries, keys, values, s["d_kq"])
        contexts.append(named[-1][1])
        step_list += steps(named, head=h)
    step_list += steps([("context_concat", torch.cat(contexts, dim=-1))])
    recipe = "\n".join([
        TOKENIZE, EMBED,
        "torch.manual_seed(seed)",
        f"for h in range({heads}):  # one SelfAttention module per head, created in turn",
        "    W_query[h] = torch.rand(d_in, d_kq); W_key[h] = torch.rand(d_in, d_kq); "
        "W_value[h] = torch.rand(d_in, d_v)",
        "per head: " + PROJECT + "; " + ATTEND.replace("\n", "; "),
        "context_concat = torch.cat([context_vectors[h] for h in heads], dim=-1)"])
    settings = {**s, "heads": heads, "multihead": "wrapper", "causal": False, "init": "rand"}
    return document(name, env, recipe, settings, dictionary, [words], [ids], step_list)


def split(name, env, heads, causal=False, d_out=4, init="linear"):
    """The course code's MultiHeadAttention: projections of width d_out split into heads, then W_o.

    init "linear": nn.Linear layers and out_proj with its bias, as the course code has them; init
    "rand": torch.rand(d_in, d_out) weights applied as X @ W, and W_o = torch.rand(d_out, d_out)
    applied as context_concat @ W_o, with no bias."""
    s = DEFAULTS
    (words,), dictionary = tokenize(s["sentence"])
    ids = [dictionary[w] for w in words]
    X = embedding(s["seed"], s["vocab_size"], s["d_in"], ids)
    T, hd = len(ids), d_out // heads
    linear = init == "linear"
    torch.manual_seed(s["seed"])
    if linear:
        W_query = torch.nn.Linear(s["d_in"], d_out, bias=False)
        W_key = torch.nn.Linear(s["d_in"], d_out, bias=False)
        W_value = torch.nn.Linear(s["d_in"], d_out, bias=False)
        out_proj = torch.nn.Linear(d_out, d_out)
    else:
        W_query, W_key, W_value = rand_weights(s["d_in"], d_out, d_out)
        W_o = torch.rand(d_out, d_out)
    with torch.no_grad():
        if linear:
            queries, keys, values = W_query(X), W_key(X), W_value(X)
        else:
            queries, keys, values = X @ W_query, X @ W_key, X @ W_value
        q, k, v = (t.view(T, heads, hd).transpose(0, 1) for t in (queries, keys, values))
        per_head = attend(q, k, v, hd, causal_mask(T) if causal else None)
        context_concat = per_head[-1][1].transpose(0, 1).contiguous().view(T, d_out)
        output = out_proj(context_concat) if linear else context_concat @ W_o
    if linear:
        weights = [("w_query", W_query.weight), ("w_key", W_key.weight),
                   ("w_value", W_value.weight), ("w_out", out_proj.weight),
                   ("b_out", out_proj.bias)]
    else:
        weights = [("w_query", W_query), ("w_key", W_key), ("w_value", W_value), ("w_out", W_o)]
    step_list = steps([("embeddings", X), *weights, ("queries", queries), ("keys", keys),
                       ("values", values)])
    for h in range(heads):
        step_list += steps(pick(per_head, h), head=h)
    step_list += steps([("context_concat", context_concat), ("output", output)])
    masking = ("mask = torch.triu(torch.ones(T, T), diagonal=1)\n"
               "masked_omega = omega.masked_fill(mask.bool(), -torch.inf); "
               "scaled_scores = masked_omega / hd**0.5" if causal else "scaled_scores = omega / hd**0.5")
    if linear:
        weights_recipe = [
            "torch.manual_seed(seed); W_query = nn.Linear(d_in, d_out, bias=False); "
            "W_key = nn.Linear(d_in, d_out, bias=False)",
            "W_value = nn.Linear(d_in, d_out, bias=False); out_proj = nn.Linear(d_out, d_out)",
            "queries = W_query(X); keys = W_key(X); values = W_value(X)  # (T, d_out)"]
        output_recipe = "output = out_proj(context_concat)"
    else:
        weights_recipe = [
            "torch.manual_seed(seed); W_query = torch.rand(d_in, d_out); "
            "W_key = torch.rand(d_in, d_out); W_value = torch.rand(d_in, d_out)",
            "W_o = torch.rand(d_out, d_out)",
            "queries = X @ W_query; keys = X @ W_key; values = X @ W_value  # (T, d_out)"]
        output_recipe = "output = context_concat @ W_o  # no bias"
    recipe = "\n".join([
        TOKENIZE, EMBED, *weights_recipe,
        "q = queries.view(T, H, hd).transpose(0, 1)  # (H, T, hd); k and v alike",
        "omega = q @ k.transpose(1, 2)", masking,
        "attention_weights = torch.softmax(scaled_scores, dim=-1); "
        "context_vectors = attention_weights @ v",
        "context_concat = context_vectors.transpose(0, 1).contiguous().view(T, d_out); "
        + output_recipe])
    settings = {"sentence": s["sentence"], "seed": s["seed"], "vocab_size": s["vocab_size"],
                "d_in": s["d_in"], "d_out": d_out, "heads": heads, "head_dim": hd,
                "multihead": "split", "causal": causal, "init": init, "out_proj_bias": linear}
    return document(name, env, recipe, settings, dictionary, [words], [ids], step_list)


def cross(name, env, causal=False):
    """Queries from one sentence, keys and values from another, one dictionary and embedding.

    causal: the rectangular mask triu(ones(T1, T2), diagonal=1), query i seeing keys 0..i."""
    s = DEFAULTS
    sentences = [ARTICLE, FOX]
    words, dictionary = tokenize(*sentences)
    ids = [[dictionary[w] for w in ws] for ws in words]
    torch.manual_seed(s["seed"])
    embed = torch.nn.Embedding(s["vocab_size"], s["d_in"])
    X1, X2 = (embed(torch.tensor(i)).detach() for i in ids)
    torch.manual_seed(s["seed"])
    W_query, W_key, W_value = rand_weights(s["d_in"], s["d_kq"], s["d_v"])
    queries, keys, values = X1 @ W_query, X2 @ W_key, X2 @ W_value
    named = [("embeddings", X1), ("embeddings_2", X2), ("w_query", W_query), ("w_key", W_key),
             ("w_value", W_value), ("queries", queries), ("keys", keys), ("values", values)]
    mask = torch.triu(torch.ones(len(ids[0]), len(ids[1])), diagonal=1) if causal else None
    named += attend(queries, keys, values, s["d_kq"], mask, both_ways=causal)
    attention = ATTEND + "  # omega (T1, T2), context (T1, d_v)"
    if causal:
        attention = ("omega = queries @ keys.T; T1, T2 = omega.shape  # (T1, T2)\n"
                     "mask = torch.triu(torch.ones(T1, T2), diagonal=1)  # query i sees keys 0..i\n"
                     "masked_omega = omega.masked_fill(mask.bool(), -torch.inf)\n"
                     "scaled_scores = masked_omega / d_kq**0.5; "
                     "attention_weights = torch.softmax(scaled_scores, dim=-1)\n"
                     "unmasked_weights = torch.softmax(omega / d_kq**0.5, dim=-1)\n"
                     "zeroed_weights = unmasked_weights * (1 - mask)\n"
                     "renormalized_weights = zeroed_weights / zeroed_weights.sum(dim=-1, keepdim=True)\n"
                     "context_vectors = attention_weights @ values  # (T1, d_v)")
    recipe = "\n".join([
        TOKENIZE,
        "torch.manual_seed(seed); embed = torch.nn.Embedding(vocab_size, d_in)",
        "X1 = embed(torch.tensor(token_ids[0])).detach(); X2 = embed(torch.tensor(token_ids[1])).detach()",
        RAND_WEIGHTS,
        "queries = X1 @ W_query; keys = X2 @ W_key; values = X2 @ W_value",
        attention])
    settings = {"sentences": sentences, "queries_from": 0, "keys_values_from": 1,
                **{k: v for k, v in s.items() if k != "sentence"},
                "heads": 1, "causal": causal, "init": "rand"}
    return document(name, env, recipe, settings, dictionary, words, ids, steps(named))


def init_linear(name, env):
    """Defaults with three bias-free nn.Linear layers instead of torch.rand matrices."""
    s = DEFAULTS
    (words,), dictionary = tokenize(s["sentence"])
    ids = [dictionary[w] for w in words]
    X = embedding(s["seed"], s["vocab_size"], s["d_in"], ids)
    torch.manual_seed(s["seed"])
    W_query = torch.nn.Linear(s["d_in"], s["d_kq"], bias=False)
    W_key = torch.nn.Linear(s["d_in"], s["d_kq"], bias=False)
    W_value = torch.nn.Linear(s["d_in"], s["d_v"], bias=False)
    with torch.no_grad():
        queries, keys, values = W_query(X), W_key(X), W_value(X)
    named = [("embeddings", X), ("w_query", W_query.weight), ("w_key", W_key.weight),
             ("w_value", W_value.weight), ("queries", queries), ("keys", keys), ("values", values)]
    named += attend(queries, keys, values, s["d_kq"])
    recipe = "\n".join([
        TOKENIZE, EMBED,
        "torch.manual_seed(seed); W_query = nn.Linear(d_in, d_kq, bias=False); "
        "W_key = nn.Linear(d_in, d_kq, bias=False); W_value = nn.Linear(d_in, d_v, bias=False)",
        "queries = W_query(X); keys = W_key(X); values = W_value(X)  # X @ W.weight.T",
        ATTEND])
    settings = {**s, "heads": 1, "causal": False, "init": "linear"}
    return document(name, env, recipe, settings, dictionary, [words], [ids], steps(named))


def init_rand_transposed(name, env, seed=123, vocab_size=6, d_in=16, d_kq=24, d_v=28):
    """The earlier walkthrough: (d_out, d_in) torch.rand matrices applied as W.matmul(X.T).T."""
    (words,), dictionary = tokenize(ARTICLE)
    ids = [dictionary[w] for w in words]
    X = embedding(seed, vocab_size, d_in, ids)
    torch.manual_seed(seed)
    W_query, W_key, W_value = torch.rand(d_kq, d_in), torch.rand(d_kq, d_in), torch.rand(d_v, d_in)
    queries = W_query.matmul(X.T).T
    keys = W_key.matmul(X.T).T
    values = W_value.matmul(X.T).T
    named = [("embeddings", X), ("w_query", W_query), ("w_key", W_key), ("w_value", W_value),
             ("queries", queries), ("keys", keys), ("values", values)]
    named += attend(queries, keys, values, d_kq)
    omega = dict(named)["omega"]
    omega_24 = W_query.matmul(X[1]).dot(keys[4])
    print(f"  init_rand_transposed: omega[1, 4] = {omega[1, 4].item():.4f}, "
          f"omega_24 = {omega_24.item():.4f} (bits {scalar(omega[1, 4])['bits']} / "
          f"{scalar(omega_24)['bits']})")
    assert f"{omega[1, 4].item():.4f}" == "11.1466" == f"{omega_24.item():.4f}"
    recipe = "\n".join([
        TOKENIZE, EMBED,
        "torch.manual_seed(seed); W_query = torch.rand(d_kq, d_in); W_key = torch.rand(d_kq, d_in); "
        "W_value = torch.rand(d_v, d_in)",
        "queries = W_query.matmul(X.T).T; keys = W_key.matmul(X.T).T; values = W_value.matmul(X.T).T",
        ATTEND,
        "omega_24 = W_query.matmul(X[1]).dot(keys[4])  # query_2.dot(keys[4]), 11.1466"])
    settings = {"sentence": ARTICLE, "seed": seed, "vocab_size": vocab_size, "d_in": d_in,
                "d_kq": d_kq, "d_v": d_v, "heads": 1, "causal": False, "init": "rand_transposed"}
    return document(name, env, recipe, settings, dictionary, [words], [ids], steps(named),
                    omega_24=scalar(omega_24))


def batch_padded(name, env, masked_rows, sentences=(ARTICLE, "eat dessert", "short life is sweet"),
                 causal=False):
    """Sentences padded to one length; pairs involving a pad position are masked.

    causal: the mask is the causal mask or the padding mask, and the zero-then-renormalise steps
    follow (a fully masked row is 0 / 0 = nan in renormalized_weights, whatever masked_rows says)."""
    s = {k: v for k, v in DEFAULTS.items() if k != "sentence"}
    sentences = list(sentences)
    words, dictionary = tokenize(*sentences)
    pad_id = len(dictionary)
    dictionary[PAD] = pad_id
    T = max(len(ws) for ws in words)
    ids = [[dictionary[w] for w in ws] + [pad_id] * (T - len(ws)) for ws in words]
    X = embedding(s["seed"], s["vocab_size"], s["d_in"], ids, padding_idx=pad_id)
    torch.manual_seed(s["seed"])
    W_query, W_key, W_value = rand_weights(s["d_in"], s["d_kq"], s["d_v"])
    Q, K, V = X @ W_query, X @ W_key, X @ W_value
    valid = torch.tensor(ids) != pad_id
    mask = ~(valid[:, :, None] & valid[:, None, :])
    if causal:
        mask = mask | causal_mask(T).bool()
    named = [("embeddings", X), ("queries", Q), ("keys", K), ("values", V)]
    named += attend(Q, K, V, s["d_kq"], mask, zero_masked_rows=masked_rows == "zero",
                    both_ways=causal)
    step_list = steps([("w_query", W_query), ("w_key", W_key), ("w_value", W_value)])
    for b in range(len(ids)):
        step_list += steps(pick(named, b), batch=b)
    zero = ("attention_weights = torch.where(mask.all(-1, keepdim=True), "
            "torch.zeros_like(attention_weights), attention_weights)  # fully masked rows: 0")
    recipe = "\n".join([
        TOKENIZE + "; dictionary['<pad>'] = pad_id = len(dictionary)",
        "token_ids = [[dictionary[w] for w in words] + [pad_id] * (T - len(words)) per sentence]",
        "torch.manual_seed(seed); embed = torch.nn.Embedding(vocab_size, d_in, padding_idx=pad_id)",
        "X = embed(torch.tensor(token_ids)).detach()  # (B, T, d_in)",
        RAND_WEIGHTS,
        "Q = X @ W_query; K = X @ W_key; V = X @ W_value",
        "omega = Q @ K.transpose(1, 2); valid = torch.tensor(token_ids) != pad_id",
        "mask = ~(valid[:, :, None] & valid[:, None, :])  # True = masked",
        *(["mask = mask | torch.triu(torch.ones(T, T), diagonal=1).bool()  # causal or padding"]
          if causal else []),
        "masked_omega = omega.masked_fill(mask, -torch.inf); scaled_scores = masked_omega / d_kq**0.5",
        "attention_weights = torch.softmax(scaled_scores, dim=-1)"
        + ("  # fully masked rows: nan" if masked_rows == "nan" else "\n" + zero),
        *(["unmasked_weights = torch.softmax(omega / d_kq**0.5, dim=-1)",
           "zeroed_weights = unmasked_weights * (1 - mask.float())",
           "renormalized_weights = zeroed_weights / zeroed_weights.sum(dim=-1, keepdim=True)"
           "  # fully masked rows: 0 / 0 = nan"] if causal else []),
        "context_vectors = attention_weights @ V"])
    settings = {"sentences": sentences, **s, "heads": 1, "causal": causal, "init": "rand",
                "pad_token": PAD, "pad_id": pad_id, "T": T,
                "masked_rows": masked_rows}
    return document(name, env, recipe, settings, dictionary, words, ids, step_list)


VARIANTS = {
    "causal": lambda env: single_head("causal", env, **DEFAULTS, causal=True),
    "causal_fox": lambda env: single_head("causal_fox", env, FOX, 7, 50000, 8, 4, 5, causal=True),
    "heads2_wrapper": lambda env: wrapper("heads2_wrapper", env, 2),
    "heads4_wrapper": lambda env: wrapper("heads4_wrapper", env, 4),
    "heads2_split": lambda env: split("heads2_split", env, 2),
    "heads4_split": lambda env: split("heads4_split", env, 4),
    "heads2_split_causal": lambda env: split("heads2_split_causal", env, 2, causal=True),
    "heads2_split_rand": lambda env: split("heads2_split_rand", env, 2, init="rand"),
    "cross": lambda env: cross("cross", env),
    "cross_causal": lambda env: cross("cross_causal", env, causal=True),
    "init_linear": lambda env: init_linear("init_linear", env),
    "init_rand_transposed": lambda env: init_rand_transposed("init_rand_transposed", env),
    "batch_padded_nan": lambda env: batch_padded("batch_padded_nan", env, "nan"),
    "batch_padded_zero": lambda env: batch_padded("batch_padded_zero", env, "zero"),
    "batch_padded_causal_zero": lambda env: batch_padded(
        "batch_padded_causal_zero", env, "zero", (ARTICLE, "eat dessert"), causal=True),
}


def make_variants(env):
    """(name, document) of every variant case, in a fixed order."""
    for name, make in VARIANTS.items():
        yield name, make(env)
