#include "cli.hpp"

#include <fmt/format.h>

#include <charconv>
#include <limits>

#include "attn/error.hpp"

namespace attn::cli {

namespace {

// A validator that accepts a decimal integer in [lo, hi] and says what it wanted otherwise.
template <typename Int>
CLI::Validator integer_in(Int lo, Int hi, const std::string& range, const std::string& note = "") {
  const std::string allowed = range + note;
  return CLI::Validator(
      [lo, hi, allowed](std::string& text) -> std::string {
        const std::size_t digits_from = (!text.empty() && text[0] == '-') ? 1 : 0;
        const bool is_integer =
            text.size() > digits_from &&
            text.find_first_not_of("0123456789", digits_from) == std::string::npos;
        if (!is_integer) return fmt::format("'{}' is not an integer; allowed: {}", text, allowed);
        Int value{};
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || value < lo || value > hi) {
          return fmt::format("{} is out of range; allowed: {}", text, allowed);
        }
        return {};
      },
      range);
}

CLI::Validator dimension() {
  return integer_in<std::int64_t>(1, kMaxDimension, fmt::format("1..{}", kMaxDimension),
                                  " (wider is not sensible for a trace)");
}

}  // namespace

void add_options(CLI::App& app, Options& o) {
  app.add_option("sentences", o.sentences,
                 "The sentence to trace (default: the walkthrough's). Several sentences form a "
                 "batch, padded to the longest; quote each one");
  app.add_option("--seed", o.config.seed, "torch.manual_seed before the embedding and the weights")
      ->check(integer_in<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max(), "0..2^64-1"))
      ->capture_default_str();
  app.add_option("--vocab-size", o.config.vocab_size,
                 "Rows of nn.Embedding(vocab-size, d-in); at least the sentence's distinct words")
      ->check(integer_in<std::int64_t>(1, kMaxVocabSize, fmt::format("1..{}", kMaxVocabSize)))
      ->capture_default_str();
  app.add_option("--d-in", o.config.d_in, "Embedding width d_in")
      ->check(dimension())
      ->capture_default_str();
  CLI::Option* d_kq = app.add_option("--d-kq", o.config.d_kq, "Width d_q = d_k of queries and keys")
                          ->check(dimension())
                          ->capture_default_str();
  CLI::Option* d_v =
      app.add_option("--d-v", o.config.d_v, "Width d_v of values and context vectors")
          ->check(dimension())
          ->capture_default_str();
  app.add_option("--d-out", o.d_out,
                 "Sets d_kq and d_v to one width d_out, as the split multi-head form has it")
      ->check(dimension())
      ->excludes(d_kq)
      ->excludes(d_v);
  app.add_flag("--causal", o.config.causal,
               "Causal attention: a token attends only to itself and earlier tokens");
  app.add_option("--masked-rows", o.masked_rows,
                 "Weights of a row whose every key is masked: nan (torch.softmax) or zero "
                 "(scaled_dot_product_attention)")
      ->check(CLI::IsMember({"nan", "zero"}))
      ->capture_default_str();
  app.add_option("--heads", o.config.heads, "Number of attention heads")
      ->check(integer_in<std::int64_t>(1, kMaxHeads, fmt::format("1..{}", kMaxHeads)))
      ->capture_default_str();
  app.add_option("--multihead", o.multihead,
                 "With --heads: wrapper (the walkthrough: one module per head, contexts "
                 "concatenated) or split (course code: one projection split into heads, then W_o)")
      ->check(CLI::IsMember({"wrapper", "split"}))
      ->capture_default_str();
  app.add_option("--init", o.init,
                 "Weights: rand (torch.rand(d_in, d_out), X W), rand-transposed (torch.rand(d_out, "
                 "d_in), W x) or linear (nn.Linear(d_in, d_out, bias=False))")
      ->check(CLI::IsMember({"rand", "rand-transposed", "linear"}))
      ->capture_default_str();
  app.add_option("--cross", o.cross,
                 "Cross-attention: keys and values from this second sentence, queries from the "
                 "sentence");
  app.add_option("--query", o.query,
                 "Print the path of the N-th token (1-based) instead of the whole trace")
      ->check(integer_in<std::int64_t>(1, std::numeric_limits<std::int64_t>::max(), "1..T"));
  app.add_option("--key", o.key,
                 "With --query: the key whose dot product is written out (default 5, the "
                 "walkthrough's query_2.dot(keys[4]), or T if T < 5)")
      ->check(integer_in<std::int64_t>(1, std::numeric_limits<std::int64_t>::max(), "1..T"));
  app.add_option("--precision", o.text.precision, "Decimals printed, as torch.set_printoptions")
      ->check(integer_in<int>(0, 8, "0..8"))
      ->capture_default_str();
  app.add_option("--torch-kernel", o.kernel,
                 "PyTorch CPU kernels to reproduce: avx2 (x86 default) or default (non-AVX2, ARM)")
      ->check(CLI::IsMember({"avx2", "default"}))
      ->capture_default_str();
  // An option given twice is an error (check_repeats), not a conversion failure inside CLI11.
  for (CLI::Option* opt : app.get_options()) {
    if (!opt->get_positional()) opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

void check_repeats(const CLI::App& app) {
  for (const CLI::Option* opt : app.get_options()) {
    if (!opt->get_positional() && opt->count() > 1) {
      throw Error(fmt::format("{}: given {} times, once is allowed (see attn-trace --help)",
                              opt->get_name(), opt->count()));
    }
  }
}

std::string run(Options& o) {
  if (!o.sentences.empty()) o.config.sentences = o.sentences;
  if (o.d_out) o.config.d_kq = o.config.d_v = *o.d_out;
  o.config.cross = o.cross;
  o.config.kernel = parse_kernel(o.kernel);
  o.config.init = parse_init(o.init);
  o.config.multihead = parse_multihead(o.multihead);
  o.config.masked_rows = parse_masked_rows(o.masked_rows);
  if (o.key && !o.query) throw Error("--key " + std::to_string(*o.key) + " needs --query");
  const Trace trace = run_trace(o.config);
  if (o.query) {
    return render_query_path(trace, *o.query, o.key.value_or(default_path_key(trace)), o.text);
  }
  return render_text(trace, o.text);
}

}  // namespace attn::cli
