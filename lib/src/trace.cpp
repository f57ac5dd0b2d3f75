#include "attn/trace.hpp"

#include <string>

#include "attn/attention.hpp"
#include "attn/embedding.hpp"
#include "attn/error.hpp"

namespace attn {

namespace {

void check_range(const char* name, std::int64_t value, std::int64_t lo, std::int64_t hi) {
  if (value < lo || value > hi) {
    throw Error(std::string(name) + " " + std::to_string(value) + " is out of range: allowed " +
                std::to_string(lo) + ".." + std::to_string(hi));
  }
}

}  // namespace

const Step& Trace::step(std::string_view id) const {
  for (const Step& s : steps) {
    if (s.id == id) return s;
  }
  throw Error("the trace has no step '" + std::string(id) + "'");
}

const std::vector<std::string_view>& step_ids() {
  static const std::vector<std::string_view> ids = {
      "embeddings", "w_query", "w_key",         "w_value",           "queries",        "keys",
      "values",     "omega",   "scaled_scores", "attention_weights", "context_vectors"};
  return ids;
}

void validate(const TraceConfig& config) {
  check_range("vocabulary size", config.vocab_size, 1, kMaxVocabSize);
  check_range("d_in", config.d_in, 1, kMaxDimension);
  check_range("d_kq", config.d_kq, 1, kMaxDimension);
  check_range("d_v", config.d_v, 1, kMaxDimension);
}

Trace run_trace(const TraceConfig& config) {
  validate(config);
  Trace trace;
  trace.config = config;

  // Tokenize: words, the dictionary and the ids.
  trace.words = tokenize(config.sentence);
  if (trace.words.empty()) {
    throw Error(
        "the sentence has no words: give at least one word (commas and white space "
        "do not count)");
  }
  trace.vocabulary = build_vocabulary(trace.words);
  if (trace.vocabulary.size() > config.vocab_size) {
    throw Error("vocabulary size " + std::to_string(config.vocab_size) +
                " is smaller than the sentence's " + std::to_string(trace.vocabulary.size()) +
                " distinct words: it must be at least " + std::to_string(trace.vocabulary.size()));
  }
  trace.ids = encode(trace.vocabulary, trace.words);
  const std::vector<std::string>& tokens = trace.words;

  auto record = [&](std::string id, std::string symbol, std::string title, std::string equation,
                    std::vector<std::string> rows, std::vector<std::string> cols, Matrix m) {
    trace.steps.push_back(Step{std::move(id), std::move(symbol), std::move(title),
                               std::move(equation), std::nullopt, std::move(rows), std::move(cols),
                               std::move(m)});
    return trace.steps.back().values;
  };

  // torch.manual_seed(seed); X = nn.Embedding(V, d_in)(ids) -> (T, d_in)
  const Matrix x = record(
      "embeddings", "X", "the embedded sentence, one row per token", "X = Embedding(V, d_in)(ids)",
      tokens, {}, embed(config.seed, config.vocab_size, config.d_in, trace.ids, config.kernel));

  // torch.manual_seed(seed); W_q, W_k: (d_in, d_kq); W_v: (d_in, d_v), drawn in that order.
  TorchGenerator gen(config.seed);
  const Matrix w_q = record("w_query", "W_q", "query weights", "W_q = torch.rand(d_in, d_kq)", {},
                            {}, torch_rand(gen, config.d_in, config.d_kq));
  const Matrix w_k = record("w_key", "W_k", "key weights", "W_k = torch.rand(d_in, d_kq)", {}, {},
                            torch_rand(gen, config.d_in, config.d_kq));
  const Matrix w_v = record("w_value", "W_v", "value weights", "W_v = torch.rand(d_in, d_v)", {},
                            {}, torch_rand(gen, config.d_in, config.d_v));

  // Q = X W_q, K = X W_k: (T, d_kq); V = X W_v: (T, d_v)
  const Matrix q = record("queries", "Q", "queries, one row per token", "Q = X W_q", tokens, {},
                          project(x, w_q));
  const Matrix k =
      record("keys", "K", "keys, one row per token", "K = X W_k", tokens, {}, project(x, w_k));
  const Matrix v =
      record("values", "V", "values, one row per token", "V = X W_v", tokens, {}, project(x, w_v));

  // ω = Q Kᵀ -> (T, T); rows are queries, columns keys
  const Matrix omega = record("omega", "ω", "unnormalized attention scores", "ω = Q Kᵀ", tokens,
                              tokens, omega_scores(q, k));
  // ω / √d_k -> (T, T)
  const Matrix scaled = record("scaled_scores", "ω / √d_k", "scaled attention scores", "ω / √d_k",
                               tokens, tokens, scale(omega, config.d_kq));
  // A = softmax(ω / √d_k) over each row -> (T, T)
  const Matrix a =
      record("attention_weights", "A", "attention weights, each row sums to 1",
             "A = softmax(ω / √d_k)", tokens, tokens, softmax_rows(scaled, config.kernel));
  // Z = A V -> (T, d_v)
  record("context_vectors", "Z", "context vectors, one row per token", "Z = A V", tokens, {},
         context_vectors(a, v));
  return trace;
}

}  // namespace attn
