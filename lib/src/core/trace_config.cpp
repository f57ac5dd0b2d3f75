// Settings: resolve() (the dimensions given matrices imply,
// every range and combination checked) and the memory estimate.

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "attn/error.hpp"
#include "attn/tokenizer_gpt2.hpp"
#include "attn/trace.hpp"
#include "modern.hpp"

namespace attn {

std::string GivenMatrix::shape() const {
  if (vector) return fmt::format("[{}]", values.cols());
  return fmt::format("[{}, {}]", values.rows(), values.cols());
}

bool draws_from_seed(const TraceConfig& c) {
  if (c.model) return false;
  const bool split = c.multihead == MultiheadForm::kSplit;
  // As draw_weights draws: the split form's W_o too, and b_o with the linear init.
  return !(c.x || c.embedding) || !c.w_query || !c.w_key || !c.w_value || (c.heads > 1 && !split) ||
         (split && (!c.w_out || (c.init == WeightInit::kLinear && !c.b_out)));
}

namespace {

void check_range(const char* name, std::int64_t value, std::int64_t lo, std::int64_t hi) {
  if (value < lo || value > hi) {
    throw Error(fmt::format("{} {} is out of range: allowed {}..{}", name, value, lo, hi));
  }
}

}  // namespace

namespace {

// Refuses row labels on a weight: its rows are input or output dimensions, not tokens, so a
// label there would be read as nothing.
void refuse_weight_labels(const TraceConfig& c) {
  struct Named {
    const std::optional<GivenMatrix>& w;
    const char* symbol;
  };
  for (const Named n : {Named{c.w_query, "W_q"}, Named{c.w_key, "W_k"}, Named{c.w_value, "W_v"},
                        Named{c.w_out, "W_o"}, Named{c.b_out, "b_o"}}) {
    if (!n.w || n.w->row_labels.empty()) continue;
    throw Error(fmt::format(
        "{} in {} labels its rows ('{}' first): a weight's rows are dimensions, not tokens; "
        "give it without labels (only X, the embedding table and the target have them)",
        n.symbol, n.w->source, n.w->row_labels.front()));
  }
}

// The split form's output projection, given: W_o (d_out, d_out) and, with the linear init, b_o.
void check_given_output(const TraceConfig& c) {
  const std::int64_t d_out = c.d_v;
  for (const auto* g : {&c.w_out, &c.b_out}) {
    if (!*g) continue;
    const char* symbol = g == &c.w_out ? "W_o" : "b_o";
    if (c.multihead != MultiheadForm::kSplit) {
      throw Error(fmt::format("{} in {}: only the split multi-head form has an output projection",
                              symbol, (*g)->source));
    }
    // d_out is one width only where d_kq and d_v agree; where they differ, the split form's own
    // check names them, which is the mistake to fix first.
    if (c.d_kq != c.d_v) continue;
    const Matrix& m = (*g)->values;
    const bool ok = g == &c.w_out ? (m.rows() == d_out && m.cols() == d_out)
                                  : (m.rows() == 1 && m.cols() == d_out);
    if (!ok) {
      throw Error(fmt::format(
          "{} in {} has shape {}, but d_out is {}: it must be {}", symbol, (*g)->source,
          (*g)->shape(), d_out,
          g == &c.w_out ? fmt::format("[{0}, {0}]", d_out) : fmt::format("[{}]", d_out)));
    }
  }
  if (c.b_out && c.init != WeightInit::kLinear) {
    throw Error(fmt::format("b_o in {}: only the linear init has an output bias", c.b_out->source));
  }
}

// Checks the given matrices' shapes against each other and sets the dimensions they imply.
void apply_given_shapes(TraceConfig& c) {
  refuse_weight_labels(c);
  if (c.x) {
    if (c.embedding) throw Error("X is given: an embedding table would not be used");
    if (c.cross) throw Error("X is given as one input matrix: cross-attention needs two sentences");
    if (c.sentences.size() > 1)
      throw Error("X is given as one input matrix: it cannot form a batch");
    c.d_in = c.x->values.cols();
    if (!c.x->row_labels.empty() &&
        static_cast<Eigen::Index>(c.x->row_labels.size()) != c.x->values.rows()) {
      throw Error(fmt::format("{} has {} rows but {} labels were given: one label per row",
                              c.x->source, c.x->values.rows(), c.x->row_labels.size()));
    }
  }
  if (c.embedding) {
    c.vocab_size = c.embedding->values.rows();
    c.d_in = c.embedding->values.cols();
  }
  const bool wrapper_heads = c.heads > 1 && c.multihead == MultiheadForm::kWrapper;
  const bool rand = c.init == WeightInit::kRand;
  // Grouped-query heads (checked later): W_k and W_v are N · d_out / H wide, for N K/V heads.
  const bool grouped = c.multihead == MultiheadForm::kSplit && c.kv_heads >= 1 &&
                       c.kv_heads < c.heads && c.heads % c.kv_heads == 0;
  // The width a weight gives: its columns for rand's (d_in, d_out), its rows otherwise.
  struct Given {
    const std::optional<GivenMatrix>& w;
    const char* symbol;
    std::int64_t* d_out;
    const char* d_out_name;
  };
  std::optional<std::string> d_kq_from;
  for (const Given g :
       {Given{c.w_query, "W_q", &c.d_kq, "d_kq"}, Given{c.w_key, "W_k", &c.d_kq, "d_kq"},
        Given{c.w_value, "W_v", &c.d_v, "d_v"}}) {
    if (!g.w) continue;
    if (wrapper_heads) {
      throw Error(
          fmt::format("{} in {}: the wrapper form draws each head's own weights; give "
                      "weights with one head or the split multi-head form",
                      g.symbol, g.w->source));
    }
    const Matrix& m = g.w->values;
    const bool shared = grouped && &g.w != &c.w_query;  // a K/V head's columns per K/V head
    const Eigen::Index in = rand ? m.rows() : m.cols();
    Eigen::Index out = rand ? m.cols() : m.rows();
    const std::string width = shared ? "d_kv" : g.d_out_name;
    const std::string layout =
        rand ? fmt::format("[d_in, {}]", width) : fmt::format("[{}, d_in]", width);
    if (in != c.d_in) {
      throw Error(
          fmt::format("{} in {} has shape {}, but X has d_in {}: with the {} init it must be "
                      "{}",
                      g.symbol, g.w->source, g.w->shape(), c.d_in, init_name(c.init), layout));
    }
    if (shared) {
      // d_kv = N · d_head: the width of the H query heads' d_out is d_head · H.
      if (out % c.kv_heads != 0) {
        throw Error(fmt::format(
            "{} in {} has shape {}, but {} key/value heads share it: with the {} init it must be "
            "{}, d_kv = {} · d_head, a multiple of {}",
            g.symbol, g.w->source, g.w->shape(), c.kv_heads, init_name(c.init), layout, c.kv_heads,
            c.kv_heads));
      }
      out = out / c.kv_heads * c.heads;
    }
    if (g.d_out == &c.d_kq && d_kq_from && out != c.d_kq) {
      if (shared) {
        throw Error(fmt::format(
            "{} in {} has shape {}, but {} gives d_out {}: {} key/value heads for {} query heads "
            "make W_k {} wide",
            g.symbol, g.w->source, g.w->shape(), *d_kq_from, c.d_kq, c.kv_heads, c.heads,
            c.d_kq / c.heads * c.kv_heads));
      }
      throw Error(
          fmt::format("{} in {} has shape {}, but {} gives d_kq {}: queries and keys "
                      "have one width",
                      g.symbol, g.w->source, g.w->shape(), *d_kq_from, c.d_kq));
    }
    *g.d_out = out;
    if (g.d_out == &c.d_kq) d_kq_from = "W_q in " + g.w->source;
  }
  check_given_output(c);
}

// The widths that a model or given matrices set, in their terms: a file's shape or a model's
// n_embd, rather than the d_in or d_kq that no option gave.
void check_given_widths(const TraceConfig& c) {
  auto refuse = [](const std::string& what, std::int64_t width) {
    throw Error(fmt::format("{}: a width of {} is out of range, allowed 1..{}", what, width,
                            kMaxDimension));
  };
  auto outside = [](std::int64_t width) { return width < 1 || width > kMaxDimension; };
  if (c.model) {
    if (outside(c.d_in)) refuse(fmt::format("the model's n_embd is {}", c.d_in), c.d_in);
    return;
  }
  for (const auto* g : {&c.x, &c.embedding}) {
    if (*g && outside(c.d_in)) {
      refuse(fmt::format("{} in {} has shape {}", g == &c.x ? "X" : "the embedding table",
                         (*g)->source, (*g)->shape()),
             c.d_in);
    }
  }
  const std::optional<GivenMatrix>* weights[] = {&c.w_query, &c.w_key, &c.w_value};
  const char* symbols[] = {"W_q", "W_k", "W_v"};
  for (int i = 0; i < 3; ++i) {
    const std::int64_t width = i == 2 ? c.d_v : c.d_kq;
    if (*weights[i] && outside(width)) {
      refuse(fmt::format("{} in {} has shape {}", symbols[i], (*weights[i])->source,
                         (*weights[i])->shape()),
             width);
    }
  }
}

// The backward pass's settings: the loss and its target, the learning rate.
void check_backward(TraceConfig& c) {
  if (!c.backward) {
    if (c.loss != Loss::kSum || c.target || c.learning_rate) {
      throw Error(
          "a loss, a target and a learning rate are settings of the backward pass: "
          "turn it on");
    }
    return;
  }
  if (c.loss == Loss::kMse && !c.target) {
    throw Error("the mse loss needs a target: the final output's values to approach");
  }
  if (c.loss != Loss::kMse && c.target) {
    throw Error(fmt::format("the target in {} is for the mse loss: the sum loss has none",
                            c.target->source));
  }
  // The step is W − (float)η dL/dW: η's float32 must be > 0 and finite.
  if (c.learning_rate) {
    const auto eta = static_cast<float>(*c.learning_rate);
    if (!(*c.learning_rate > 0) || !(eta > 0.0f) || !std::isfinite(eta)) {
      throw Error(fmt::format(
          "learning rate {} is not allowed: it must be a number > 0 that float32 holds, "
          "1.4e-45 to 3.4e38",
          *c.learning_rate));
    }
  }
  c.release_scores = false;  // the backward pass reads every head's weights
}

// A model's trace: the lesson's settings from the checkpoint; what GPT-2 does not have refused.
void resolve_model(TraceConfig& c) {
  if (!c.model) {
    if (c.layer != 0 || c.model_head) {
      throw Error("a layer and a head are chosen in a model's trace: give a model");
    }
    return;
  }
  const Gpt2Config& m = c.model->config();
  auto refuse = [](const char* what) { throw Error(fmt::format("a model's trace {}", what)); };
  if (c.x || c.embedding || c.w_query || c.w_key || c.w_value || c.w_out || c.b_out) {
    refuse("takes no given matrices: the checkpoint's are the ones traced");
  }
  if (c.cross) refuse("has no cross-attention: GPT-2 attends over its own tokens");
  if (c.rope || c.window > 0 || (c.kv_heads != 0 && c.kv_heads != m.n_head)) {
    refuse("is GPT-2's: learned positions, a K/V head per query head, no window");
  }
  if (c.backward) refuse("has no backward pass");
  if (c.decode || c.online_softmax > 0) {
    refuse("has no KV cache nor online softmax: they follow the lesson's weights");
  }
  if (c.layer < 0 || c.layer >= m.n_layer) {
    throw Error(
        fmt::format("layer {} is not in the model: its layers are 0 … {}", c.layer, m.n_layer - 1));
  }
  if (c.model_head && (*c.model_head < 0 || *c.model_head >= m.n_head)) {
    throw Error(fmt::format("head {} is not in the model: its heads are 0 … {}", *c.model_head,
                            m.n_head - 1));
  }
  c.tokenizer = gpt2_tokenizer();
  c.multihead = MultiheadForm::kSplit;
  c.heads = m.n_head;
  c.kv_heads = m.n_head;
  c.d_in = c.d_kq = c.d_v = m.n_embd;
  c.vocab_size = m.vocab_size;
  c.causal = true;
  c.init = WeightInit::kRand;  // Conv1D stores W as (in, out): y = x W + b
}

}  // namespace

int head_number(const TraceConfig& config, int head) { return config.model ? head : head + 1; }

bool head_traced(const TraceConfig& config, std::int64_t head) {
  return !config.model_head || *config.model_head == head;
}

TraceConfig resolve(const TraceConfig& config) {
  TraceConfig c = config;
  if (c.sentences.empty() && !c.x) throw Error("no sentence: give at least one");
  resolve_model(c);
  apply_given_shapes(c);
  if (c.x && !c.embedding) c.vocab_size = std::max<std::int64_t>(c.vocab_size, 1);
  check_given_widths(c);
  check_range("vocabulary size", c.vocab_size, 1, kMaxVocabSize);
  check_range("d_in", c.d_in, 1, kMaxDimension);
  check_range("d_kq", c.d_kq, 1, kMaxDimension);
  check_range("d_v", c.d_v, 1, kMaxDimension);
  check_range("heads", c.heads, 1, kMaxHeads);
  check_range("threads", c.threads, 1, 256);
  if (c.cross && c.sentences.size() > 1) {
    throw Error(fmt::format("cross-attention takes one query sentence; got {} sentences",
                            c.sentences.size()));
  }
  check_range("online softmax tile size", c.online_softmax, 0, kMaxOnlineTile);
  if (c.decode) {
    if (c.cross) {
      throw Error(
          "KV-cache decoding and cross-attention do not go together: decoding caches each new "
          "token's own key and value, and cross-attention takes them from another sentence");
    }
    c.causal = true;  // a token being decoded has no later tokens to see
  }
  if (c.multihead == MultiheadForm::kSplit) {
    if (c.d_kq != c.d_v) {
      const std::string differ = fmt::format(
          "the split multi-head form projects to one width d_out, but d_kq {} and d_v {} differ",
          c.d_kq, c.d_v);
      // --d-out cannot go with a given weight: the widths are then the files' and the other's.
      const bool kq_given = c.w_query || c.w_key;
      if (!kq_given && !c.w_value) throw Error(differ + ": give one width", Setting::kWidths);
      throw Error(fmt::format("{}: {}", differ,
                              kq_given && c.w_value ? "give W_v as wide as W_q"
                              : kq_given ? fmt::format("give --d-v {} to match W_q", c.d_kq)
                                         : fmt::format("give --d-kq {} to match W_v", c.d_v)));
    }
    if (c.d_kq % c.heads != 0) {
      throw Error(fmt::format("d_out {} does not split into {} heads: it must be a multiple of {}",
                              c.d_kq, c.heads, c.heads));
    }
  }
  check_backward(c);
  resolve_variants(c);
  return c;
}

}  // namespace attn
