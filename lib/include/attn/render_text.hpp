#pragma once

// The text renderer: a trace as a person reads it, in PyTorch's tensor([...]) style.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/trace.hpp"

namespace attn {

struct TextOptions {
  int precision = 4;      // decimals, as torch.set_printoptions(precision=...); 0..8
  bool describe = false;  // a sentence or two under each step's header: what it computes, why
};

// The whole trace: settings, dictionary, token ids, then every step with a header (number, id,
// title, equation, shape) and its values, rows labelled with their tokens.
std::string render_text(const Trace& trace, const TextOptions& options);

// The same text in blocks, one per step, the first with the preamble before it (for a lesson
// that pauses after each step).
std::vector<std::string> render_text_blocks(const Trace& trace, const TextOptions& options);

// One token's path through the trace, as the walkthrough follows x⁽²⁾: its embedding, query,
// key and value, the dot product ω_qk written out term by term, ω for every key, the weights
// and the context vector — per head where there are heads, per sentence of a batch.
// `query` and `key` are 1-based; key counts the keys' sentence (the --cross one, if any).
// Requires: 1 <= query <= T and 1 <= key <= T_k. Throws Error naming the value otherwise.
std::string render_query_path(const Trace& trace, std::int64_t query, std::int64_t key,
                              const TextOptions& options);

// The key whose dot product the query path writes out when none is chosen: the walkthrough's
// omega_24 = query_2.dot(keys[4]) indexes keys from 0, so it is the 5th token's key: 5, or the
// last token in a sentence of fewer than 5 words.
std::int64_t default_path_key(const Trace& trace);
// The same, for keys of t_k tokens.
std::int64_t default_path_key(std::int64_t t_k);

// Throws Error unless `query` is a token of the queries' sentence (1..t_q) and `key` one of the
// keys' (1..t_k), naming the value and the sentence's length: "query 7 is out of range: the
// sentence has 6 tokens, allowed 1..6" (the query and the key sentence with --cross). The
// check of render_query_path, render_explain and render_explain_grad, for a program to make
// before the run (TraceConfig::on_plan).
void check_query_and_key(bool cross, std::int64_t t_q, std::int64_t t_k, std::int64_t query,
                         std::int64_t key);

// Python's repr of the dictionary: {'Life': 0, 'dessert': 1, ...}, with the padding token last
// when there is one; broken between entries into lines of at most 80 columns (the lines after the
// first indented by a space, as pprint does).
std::string dictionary_repr(const Vocabulary& vocabulary,
                            std::optional<std::int64_t> pad_id = std::nullopt);

// A tokenizer's dictionary, one token a line: its id, Python's repr of the token as the
// tokenizer writes it, and the token as display() shows it ("  318  'Ġis'  ␣is"); the padding
// token last when there is one.
std::string token_table(const Vocabulary& vocabulary, const Tokenizer& tokenizer,
                        std::optional<std::int64_t> pad_id = std::nullopt);

}  // namespace attn
