"""GPT-2 checkpoints with random weights, and PyTorch's steps of one layer's attention over a
prompt.

Writes data/reference/gpt2_model/<case>/model.safetensors (Hugging Face's GPT-2 tensor names), a
config.json beside it in the cases that have one, and expected.json: the steps of `--model` for the
traced layer, computed by GPT-2's forward pass (Hugging Face's GPT2Model) written out below in
float32 with one thread. The cases (vocab_size 50257 in all; after torch.manual_seed(seed), the
weights are drawn in the order shapes() lists them, the scales in RECIPE):

  f32_l2_h2_d32     F32; config.json (n_inner null, gelu_new); layer 1 traced, every head
  f16_l3_h4_d64     stored as F16; config.json (n_inner 128, gelu); layer 2, head 3 only
  prefix_l2_h4_d32  F32, names prefixed "transformer." and the tensors a real file also has
                    (h.N.attn.bias, h.N.attn.masked_bias, lm_head.weight); no config.json, so the
                    test passes --n-head 4; layer 0, every head
  bf16_l1_h2_d16    stored as BF16; config.json (n_positions 32); layer 0, every head

The prefix case's tensors are in the file sorted by name, as a saved file has them; the others' in
the order drawn. A case stored as F16 or BF16 has every tensor rounded to that type and back before
the steps are computed: they are the steps of the weights as the file holds them. The prompt's
token ids come from make_gpt2_tokens.py's encoder over data/gpt2. expected.json has the layout of
variants.py's files ({"case", "recipe", "settings", "prompt", "token_ids", "tokens", "steps"};
"tokens" are the encoder.json strings of the ids); "steps", in this order: token_embeddings,
position_embeddings, embeddings, residual_stream (the hidden state entering the traced layer; only
when it is not layer 0), ln_1, w_query, w_key, w_value, b_query, b_key, b_value, w_out, b_out,
queries, keys, values, then per traced head head_queries, head_keys and head_values ([T, d / H], split
from c_attn's output), omega, mask, masked_omega, scaled_scores,
attention_weights, context_vectors, and last context_concat (every head) and output. Before
writing, the script checks its per-head forward pass against a batched one (every head at once,
HF's scaled-then-masked scores, the activations by their formulas): block by block, from the same
hidden state, they agree to 1e-6 relative to max(1, |value|).

PyTorch's matmul is the reference BLAS's, as in make_references.py: the script runs itself again
with Debian's reference BLAS first on the library path. Run from the project root with Debian's
PyTorch (python3-torch 1.13.1) and python3-regex:

    /usr/bin/python3 tests/reference/make_gpt2_model_references.py

    /usr/bin/python3 tests/reference/make_gpt2_model_references.py --gpt2-small DIR

The second form writes only DIR/model.safetensors and DIR/config.json: a random checkpoint of GPT-2
small's exact shapes (12 layers, 12 heads, n_embd 768, n_positions 1024, vocab 50257, F32, names
without prefix, with the h.N.attn.bias buffers [1, 1, 1024, 1024] of the real 548 MB file, and the
real file's config.json, which has no n_inner), for timing --model. Weights and embeddings
~ N(0, 0.02) as GPT-2's initialisation, biases 0, layer norms weight 1 and bias 0. The tensors are
drawn and written one at a time. It is not stored in the repository. The script is not run by CI.
"""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

REFERENCE_BLAS = "/usr/lib/x86_64-linux-gnu/blas"  # as make_references.py
if __name__ == "__main__" and os.environ.get("LD_LIBRARY_PATH") != REFERENCE_BLAS:
    sys.exit(subprocess.run([sys.executable, __file__, *sys.argv[1:]],
                            env={**os.environ, "LD_LIBRARY_PATH": REFERENCE_BLAS}).returncode)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_gpt2_tokens  # noqa: E402
from make_references import ROOT, write  # noqa: E402
from variants import ARTICLE, step  # noqa: E402

OUT = ROOT / "data" / "reference" / "gpt2_model"
VOCAB = 50257
DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
TOLERANCE = 1e-6

CASES = {
    "f32_l2_h2_d32": dict(seed=123, n_layer=2, n_head=2, n_embd=32, n_positions=64, n_inner=None,
                          activation_function="gelu_new", dtype="F32", prefix=False,
                          config_json=True, prompt=ARTICLE, layer=1, head=None),
    "f16_l3_h4_d64": dict(seed=124, n_layer=3, n_head=4, n_embd=64, n_positions=64, n_inner=128,
                          activation_function="gelu", dtype="F16", prefix=False, config_json=True,
                          prompt="The café's 2 cats—naïve, 😺—don't sleep!\n  Really?",
                          layer=2, head=3),
    "prefix_l2_h4_d32": dict(seed=125, n_layer=2, n_head=4, n_embd=32, n_positions=64,
                             n_inner=None, activation_function="gelu_new", dtype="F32",
                             prefix=True, config_json=False,
                             prompt="Attention is all you need, they said.", layer=0, head=None),
    "bf16_l1_h2_d16": dict(seed=126, n_layer=1, n_head=2, n_embd=16, n_positions=32, n_inner=None,
                           activation_function="gelu_new", dtype="BF16", prefix=False,
                           config_json=True, prompt="Hello world", layer=0, head=None),
}
EPS = 1e-5

RECIPE = """\
torch.manual_seed(seed); every tensor drawn in the file's order of names: wte, wpe ~ N(0, 0.5);
  ln_*.weight ~ 1 + N(0, 0.1); ln_*.bias ~ N(0, 0.1); c_attn.weight ~ N(0, 0.3);
  other weights ~ N(0, 0.1); other biases ~ N(0, 0.05); F16/BF16: w = w.to(dtype).to(torch.float32)
token_embeddings = wte[ids]; position_embeddings = wpe[:T]
embeddings = token_embeddings + position_embeddings
h = embeddings; for n in range(L): h = block(h, n)          # residual_stream = h, when L > 0
block(h, n), float32, one thread (ln_1 to output: layer L's steps, its weights sliced below)
    ln_1 = F.layer_norm(h, (d,), ln_1.weight, ln_1.bias, layer_norm_epsilon)
    queries, keys, values = conv1d(ln_1, attn.c_attn).split(d, dim=-1)
    # w_query, w_key, w_value = c_attn.weight[:, :d], [:, d:2 * d], [:, 2 * d:]; b_* of c_attn.bias
    # w_out, b_out = attn.c_proj.weight, attn.c_proj.bias
    head i: q_i = queries.view(T, H, d // H).transpose(0, 1)[i]; k_i, v_i alike
        omega = q_i @ k_i.T; mask = torch.triu(torch.ones(T, T), diagonal=1)
        masked_omega = omega.masked_fill(mask.bool(), -torch.inf)
        scaled_scores = masked_omega / math.sqrt(d // H)
        attention_weights = torch.softmax(scaled_scores, dim=-1)
        context_vectors = attention_weights @ v_i
    context_concat = torch.cat([context_vectors of each head], dim=-1)   # (T, d)
    output = conv1d(context_concat, attn.c_proj)
    h = h + output; m = F.layer_norm(h, (d,), ln_2.weight, ln_2.bias, layer_norm_epsilon)
    h = h + conv1d(act(conv1d(m, mlp.c_fc)), mlp.c_proj)
conv1d(x, c) = torch.addmm(c.bias, x, c.weight), as Hugging Face's Conv1D computes it
act: gelu_new = 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
     (Hugging Face's NewGELUActivation); gelu = F.gelu(x)"""


# --- the safetensors file ----------------------------------------------------------------------

def tensor_buffer(t, dtype):
    """The little-endian, row-major bytes of t as dtype ("F32", "F16" or "BF16"), without a copy
    for F32."""
    t = t.to(DTYPES[dtype]).contiguous()
    if dtype != "F32":
        t = t.view(torch.int16)
    return t.numpy()


def write_safetensors(path, entries, metadata=None):
    """entries: [(name, dtype, shape, tensor or a function that makes it)], in the file's order.

    The header is written first from the shapes; each tensor is then made and written in turn."""
    assert sys.byteorder == "little"
    header = {"__metadata__": metadata or {"format": "pt"}}
    offset = 0
    for name, dtype, shape, _ in entries:
        size = math.prod(shape) * (4 if dtype == "F32" else 2)
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for name, dtype, shape, make in entries:
            t = make() if callable(make) else make
            assert list(t.shape) == list(shape), (name, t.shape, shape)
            f.write(tensor_buffer(t, dtype))
            del t
        assert f.tell() == 8 + len(text) + offset
    return header


def config(c, real=False):
    """config.json: the keys GPT2Config reads (real: as the gpt2 repository's file has them)."""
    if real:
        return {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
                "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1,
                "eos_token_id": 50256, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05,
                "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12,
                "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": None,
                "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
                "summary_type": "cls_index", "summary_use_proj": True,
                "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
                "vocab_size": 50257}
    return {"model_type": "gpt2", "n_layer": c["n_layer"], "n_head": c["n_head"],
            "n_embd": c["n_embd"], "n_positions": c["n_positions"], "vocab_size": VOCAB,
            "layer_norm_epsilon": EPS, "n_inner": c["n_inner"],
            "activation_function": c["activation_function"]}


# --- the weights -------------------------------------------------------------------------------

def shapes(n_layer, d, n_inner, n_positions):
    """(name, shape, kind) of every parameter, in the order they are drawn and written."""
    out = [("wte.weight", (VOCAB, d), "embedding"), ("wpe.weight", (n_positions, d), "embedding")]
    for n in range(n_layer):
        p = f"h.{n}."
        out += [(p + "ln_1.weight", (d,), "ln_weight"), (p + "ln_1.bias", (d,), "ln_bias"),
                (p + "attn.c_attn.weight", (d, 3 * d), "attn_weight"),
                (p + "attn.c_attn.bias", (3 * d,), "bias"),
                (p + "attn.c_proj.weight", (d, d), "weight"),
                (p + "attn.c_proj.bias", (d,), "bias"),
                (p + "ln_2.weight", (d,), "ln_weight"), (p + "ln_2.bias", (d,), "ln_bias"),
                (p + "mlp.c_fc.weight", (d, n_inner), "weight"),
                (p + "mlp.c_fc.bias", (n_inner,), "bias"),
                (p + "mlp.c_proj.weight", (n_inner, d), "weight"),
                (p + "mlp.c_proj.bias", (d,), "bias")]
    return out + [("ln_f.weight", (d,), "ln_weight"), ("ln_f.bias", (d,), "ln_bias")]


def draw(shape, kind):
    if kind == "embedding":
        return torch.randn(shape) * 0.5
    if kind == "ln_weight":
        return 1 + torch.randn(shape) * 0.1
    if kind == "ln_bias":
        return torch.randn(shape) * 0.1
    if kind == "attn_weight":
        return torch.randn(shape) * 0.3
    if kind == "weight":
        return torch.randn(shape) * 0.1
    return torch.randn(shape) * 0.05


def draw_small(shape, kind):
    if kind in ("embedding", "attn_weight", "weight"):
        return torch.randn(shape).mul_(0.02)
    return torch.ones(shape) if kind == "ln_weight" else torch.zeros(shape)


# --- GPT-2's forward pass ----------------------------------------------------------------------

def conv1d(x, W, name):
    """Hugging Face's Conv1D: torch.addmm(bias, x, weight), each sum started from the bias."""
    return torch.addmm(W[name + ".bias"], x, W[name + ".weight"])


def new_gelu(x):
    """Hugging Face's NewGELUActivation (GPT-2's gelu_new), operation by operation."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def activation(name):
    return {"gelu_new": new_gelu, "gelu": F.gelu}[name]


def attention(a, W, n, n_head):
    """(queries, keys, values, [per head {step id: tensor}], context_concat, output)."""
    T, d = a.shape
    hd = d // n_head
    qkv = conv1d(a, W, f"h.{n}.attn.c_attn")
    queries, keys, values = qkv.split(d, dim=-1)
    q, k, v = (t.view(T, n_head, hd).transpose(0, 1) for t in (queries, keys, values))
    mask = torch.triu(torch.ones(T, T), diagonal=1)
    heads = []
    for h in range(n_head):
        omega = q[h] @ k[h].T
        masked = omega.masked_fill(mask.bool(), -torch.inf)
        scaled = masked / math.sqrt(hd)
        weights = torch.softmax(scaled, dim=-1)
        heads.append({"head_queries": q[h], "head_keys": k[h], "head_values": v[h], "omega": omega, "mask": mask, "masked_omega": masked,
                      "scaled_scores": scaled, "attention_weights": weights,
                      "context_vectors": weights @ v[h]})
    concat = torch.cat([s["context_vectors"] for s in heads], dim=-1)
    output = conv1d(concat, W, f"h.{n}.attn.c_proj")
    return queries, keys, values, heads, concat, output


def block(h, W, n, c):
    """The hidden state after block n, and the block's attention (attention()'s tuple, ln_1)."""
    d = h.shape[-1]
    a = F.layer_norm(h, (d,), W[f"h.{n}.ln_1.weight"], W[f"h.{n}.ln_1.bias"], EPS)
    att = attention(a, W, n, c["n_head"])
    h = h + att[-1]
    m = F.layer_norm(h, (d,), W[f"h.{n}.ln_2.weight"], W[f"h.{n}.ln_2.bias"], EPS)
    m = activation(c["activation_function"])(conv1d(m, W, f"h.{n}.mlp.c_fc"))
    h = h + conv1d(m, W, f"h.{n}.mlp.c_proj")
    return h, att, a


def batched_block(h, W, n, c):
    """Block n another way: every head in one batched product, the scores scaled before HF's
    finfo.min mask, the activations by their formulas. (hidden state after it, attention output)."""
    T, d = h.shape
    H = c["n_head"]
    hd = d // H

    def ln(x, name):
        return F.layer_norm(x, (d,), W[name + ".weight"], W[name + ".bias"], EPS)

    qkv = conv1d(ln(h, f"h.{n}.ln_1"), W, f"h.{n}.attn.c_attn")
    q, k, v = (t.reshape(T, H, hd).permute(1, 0, 2) for t in qkv.split(d, dim=-1))
    scores = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], hd ** 0.5)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool)).view(1, T, T)
    scores = torch.where(causal, scores, torch.tensor(torch.finfo(torch.float32).min))
    z = torch.matmul(torch.softmax(scores, dim=-1), v).permute(1, 0, 2).reshape(T, d)
    out = conv1d(z, W, f"h.{n}.attn.c_proj")
    h = h + out
    m = conv1d(ln(h, f"h.{n}.ln_2"), W, f"h.{n}.mlp.c_fc")
    if c["activation_function"] == "gelu_new":
        m = 0.5 * m * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (m + 0.044715 * m ** 3)))
    else:
        m = 0.5 * m * (1.0 + torch.erf(m / math.sqrt(2.0)))
    return h + conv1d(m, W, f"h.{n}.mlp.c_proj"), out


def check(name, a, b):
    """The largest difference of a and b relative to max(1, |b|), at most TOLERANCE."""
    diff = ((a - b).abs() / b.abs().clamp(min=1)).max().item()
    assert diff <= TOLERANCE, f"{name}: the two forward passes differ by {diff} (relative)"
    return diff


# --- the cases ---------------------------------------------------------------------------------

def make_case(name, c, enc):
    d, L = c["n_embd"], c["layer"]
    n_inner = c["n_inner"] or 4 * d
    torch.manual_seed(c["seed"])
    W = {}
    for key, shape, kind in shapes(c["n_layer"], d, n_inner, c["n_positions"]):
        W[key] = draw(shape, kind).to(DTYPES[c["dtype"]]).to(torch.float32)

    out = OUT / name
    out.mkdir(parents=True, exist_ok=True)
    entries = [(key, c["dtype"], tuple(t.shape), t) for key, t in W.items()]
    if c["prefix"]:
        P = c["n_positions"]
        for n in range(c["n_layer"]):
            entries += [(f"h.{n}.attn.bias", "F32", (1, 1, P, P),
                         torch.tril(torch.ones(P, P)).view(1, 1, P, P)),
                        (f"h.{n}.attn.masked_bias", "F32", (), torch.tensor(-1e4))]
        entries = [("transformer." + e[0], *e[1:]) for e in entries]
        entries.append(("lm_head.weight", c["dtype"], (VOCAB, d), W["wte.weight"]))
        entries.sort(key=lambda e: e[0])  # a saved file's order: by name
    path = out / "model.safetensors"
    write_safetensors(path, entries)
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes")
    if c["config_json"]:
        cfg = out / "config.json"
        cfg.write_text(json.dumps(config(c), indent=2) + "\n", encoding="utf-8")

    ids = enc.encode(c["prompt"])
    decoder = {i: s for s, i in enc.encoder.items()}
    T = len(ids)
    assert T <= c["n_positions"]
    with torch.no_grad():
        tok = W["wte.weight"][torch.tensor(ids)]
        pos = W["wpe.weight"][:T]
        h = tok + pos
        named = [("token_embeddings", tok), ("position_embeddings", pos), ("embeddings", h)]
        diffs = []
        for n in range(L):
            other, _ = batched_block(h, W, n, c)
            h, _, _ = block(h, W, n, c)
            diffs.append(check(f"{name} block {n}", h, other))
        if L > 0:
            named.append(("residual_stream", h))
        _, (queries, keys, values, heads, concat, output), a = block(h, W, L, c)
        diffs.append(check(f"{name} layer {L} output", output, batched_block(h, W, L, c)[1]))
        Wa, ba = W[f"h.{L}.attn.c_attn.weight"], W[f"h.{L}.attn.c_attn.bias"]
        named += [("ln_1", a),
                  ("w_query", Wa[:, :d]), ("w_key", Wa[:, d:2 * d]), ("w_value", Wa[:, 2 * d:]),
                  ("b_query", ba[:d]), ("b_key", ba[d:2 * d]), ("b_value", ba[2 * d:]),
                  ("w_out", W[f"h.{L}.attn.c_proj.weight"]),
                  ("b_out", W[f"h.{L}.attn.c_proj.bias"]),
                  ("queries", queries), ("keys", keys), ("values", values)]
        step_list = [step(i, t) for i, t in named]
        for hh in range(c["n_head"]) if c["head"] is None else [c["head"]]:
            step_list += [step(i, t, head=hh) for i, t in heads[hh].items()]
        if c["n_head"] > 1:
            step_list.append(step("context_concat", concat))
        step_list.append(step("output", output))
    print(f"  {name}: {T} tokens, the two forward passes differ by at most {max(diffs):.3g} "
          "(relative)")

    settings = {"layer": L, "head": c["head"], "n_head": c["n_head"], "n_embd": d,
                "n_layer": c["n_layer"], "n_inner": n_inner,
                "activation_function": c["activation_function"], "dtype": c["dtype"],
                "prefix": c["prefix"], "config_json": c["config_json"],
                "layer_norm_epsilon": EPS, "n_positions": c["n_positions"], "vocab_size": VOCAB,
                "seed": c["seed"]}
    document = {"case": name, "recipe": {"text": RECIPE}, "settings": settings,
                "prompt": c["prompt"], "token_ids": ids, "tokens": [decoder[i] for i in ids],
                "steps": step_list}
    write(out / "expected.json", document)


def make_gpt2_small(directory):
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    n_layer, d, P = 12, 768, 1024
    torch.manual_seed(124)
    entries = [(key, "F32", shape, lambda shape=shape, kind=kind: draw_small(shape, kind))
               for key, shape, kind in shapes(n_layer, d, 4 * d, P)]
    causal = [(f"h.{n}.attn.bias", "F32", (1, 1, P, P),
               lambda: torch.tril(torch.ones(P, P)).view(1, 1, P, P)) for n in range(n_layer)]
    # each layer's buffer after its parameters, as GPT2Model's state_dict has it
    for n in reversed(range(n_layer)):
        at = max(i for i, e in enumerate(entries) if e[0].startswith(f"h.{n}.")) + 1
        entries.insert(at, causal[n])
    path = directory / "model.safetensors"
    write_safetensors(path, entries)
    (directory / "config.json").write_text(json.dumps(config(None, real=True), indent=2) + "\n",
                                           encoding="utf-8")
    print(f"{path}: {path.stat().st_size} bytes, {len(entries)} tensors")


def main():
    torch.set_num_threads(1)
    args = sys.argv[1:]
    if args:
        if len(args) != 2 or args[0] != "--gpt2-small":
            sys.exit(f"usage: {sys.argv[0]} [--gpt2-small DIR]")
        make_gpt2_small(args[1])
        return
    make_gpt2_tokens.DATA = str(ROOT / "data" / "gpt2")
    enc = make_gpt2_tokens.get_encoder()
    for name, c in CASES.items():
        make_case(name, c, enc)


if __name__ == "__main__":
    main()
