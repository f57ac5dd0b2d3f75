// Today's attention variants: their settings' checks, and the rotary embeddings' steps.

#include <fmt/format.h>

#include <vector>

#include "attn/error.hpp"
#include "attn/torch_kernels.hpp"
#include "modern.hpp"

namespace attn {

namespace {

void check_rope(const TraceConfig& c) {
  if (c.cross) {
    throw Error(
        "rotary embeddings turn each token by its position in its own sentence: "
        "cross-attention's two sentences share no positions");
  }
  if (!rope_base_float32(c.rope_theta)) {
    throw Error(
        fmt::format("the rotary base θ {} is out of range: allowed a number > 0 that "
                    "float32 holds (1.4e-45 to 3.4028235e38)",
                    c.rope_theta));
  }
  const std::int64_t d = head_width(c);
  if (d % 2 != 0) {
    throw Error(fmt::format(
        "rotary embeddings turn pairs of numbers, but each head's queries and keys have {} {}, "
        "an odd number: it must be even",
        d, c.multihead == MultiheadForm::kSplit ? "(d_out / heads)" : "(d_kq)"));
  }
}

void check_grouping(TraceConfig& c) {
  if (c.kv_heads == 0) c.kv_heads = c.heads;
  if (c.kv_heads < 1 || c.kv_heads > c.heads) {
    throw Error(fmt::format("key/value heads {} is out of range: allowed 1..{} (the query heads)",
                            c.kv_heads, c.heads));
  }
  if (c.kv_heads == c.heads) return;
  if (c.multihead != MultiheadForm::kSplit) {
    throw Error(fmt::format(
        "{} key/value heads for {} query heads need the split multi-head form: the wrapper "
        "form's heads each have their own K and V",
        c.kv_heads, c.heads));
  }
  if (c.heads % c.kv_heads != 0) {
    throw Error(
        fmt::format("{} query heads cannot share {} key/value heads equally: the K/V "
                    "heads must divide {}",
                    c.heads, c.kv_heads, c.heads));
  }
}

}  // namespace

std::int64_t head_width(const TraceConfig& c) {
  return c.multihead == MultiheadForm::kSplit ? c.d_kq / c.heads : c.d_kq;
}

std::int64_t kv_width(const TraceConfig& c) {
  return (c.kv_heads == 0 ? c.heads : c.kv_heads) * (c.d_kq / c.heads);
}

std::string sharing_note(const TraceConfig& c) {
  if (c.kv_heads == 0 || c.kv_heads == c.heads) return {};
  return kv_sharing_text(c.heads, c.kv_heads);
}

void resolve_variants(TraceConfig& c) {
  if (c.window < 0) {
    throw Error(
        fmt::format("window {} is out of range: allowed 1 or more keys (0: no window)", c.window));
  }
  if (c.window > 0) c.causal = true;
  check_grouping(c);
  if (c.rope) check_rope(c);
}

namespace lesson {

std::optional<RopeTables> record_rope_tables(Recorder& rec, std::int64_t t) {
  const TraceConfig& c = rec.config();
  if (!c.rope) return std::nullopt;
  const std::int64_t d = head_width(c);
  const bool half = c.rope_pairs == RopePairs::kHalf;
  RopeTables tables = rope_tables(t, d, *rope_base_float32(c.rope_theta), c.rope_pairs, c.kernel);
  const std::string angles = half ? "cat(angles, angles)" : "angles.repeat_interleave(2, dim=-1)";
  std::string note = fmt::format(
      "row p is position p; {} hold the angle p · inv_freq_i, inv_freq_i = 1 / {}^(2i / {})",
      half ? fmt::format("columns i and i + {}", d / 2) : std::string("columns 2i and 2i + 1"),
      c.rope_theta, d);
  if (c.kernel == TorchKernel::kAvx2 && !sleef_runs()) {
    // PyTorch's AVX2 kernels run SLEEF's AVX2 pow, cos and sin, which cannot run here.
    note += fmt::format(
        "; not PyTorch's AVX2 bits: {}, so pow, cos and sin are the C library's, as in the "
        "default kernels",
        sleef_missing());
  }
  std::vector<std::string> rows;
  for (std::int64_t p = 0; p < t; ++p) rows.push_back(fmt::format("p={}", p));
  const std::string dim = c.multihead == MultiheadForm::kSplit ? "d_head" : "d_kq";
  rec.add(StepKind::kRopeCos, fmt::format("cos = cos({})", angles), {"T", dim}, tables.cos,
          std::nullopt, std::nullopt, {.rows = rows, .note = note});
  rec.add(StepKind::kRopeSin, fmt::format("sin = sin({})", angles), {"T", dim}, tables.sin,
          std::nullopt, std::nullopt, {.rows = rows});
  return tables;
}

Qkv rotate(Recorder& rec, const Item& item, const Qkv& p, const std::optional<RopeTables>& rope,
           std::optional<int> head) {
  if (!rope) return p;
  const TraceConfig& c = rec.config();
  const bool split = c.multihead == MultiheadForm::kSplit;
  const std::string turn = c.rope_pairs == RopePairs::kHalf ? "rotate_half" : "rotate_every_two";
  const std::string per_head = split ? " (each head's columns)" : "";
  const std::string kv_dim = !split ? "d_kq" : c.kv_heads != c.heads ? "d_kv" : "d_out";
  const Matrix& q =
      rec.add(StepKind::kRotatedQueries, fmt::format("Q' = Q·cos + {}(Q)·sin{}", turn, per_head),
              {"T", split ? "d_out" : "d_kq"}, rope_rotate(*p.q, *rope, c.rope_pairs), item.index,
              head, {.rows = item.queries.words});
  const Matrix& k =
      rec.add(StepKind::kRotatedKeys, fmt::format("K' = K·cos + {}(K)·sin{}", turn, per_head),
              {"T", kv_dim}, rope_rotate(*p.k, *rope, c.rope_pairs), item.index, head,
              {.rows = item.keys.words, .note = sharing_note(c)});
  return {&q, &k, p.v};
}

}  // namespace lesson

}  // namespace attn
