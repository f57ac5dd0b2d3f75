# Writes OUT, a C++ file that holds GPT-2's merges (data/gpt2/vocab.bpe) byte for byte, as an
# array of bytes, so that the tokenizer needs no file at run time. Run at build time:
#   cmake -DIN=.../vocab.bpe -DOUT=... -P embed_gpt2.cmake
file(READ "${IN}" bytes HEX)
string(LENGTH "${bytes}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${bytes}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){20})" "\\1\n    " bytes "${bytes}")
set(code "// Written by lib/src/core/embed_gpt2.cmake from data/gpt2/vocab.bpe: do not edit.\n\n")
string(APPEND code "#include \"gpt2_data.hpp\"\n\nnamespace attn::gpt2_detail {\n\nnamespace {\n\n")
string(APPEND code "constexpr unsigned char k_vocab_bpe[${size}] = {\n    ${bytes}};\n\n}  // namespace\n\n")
string(APPEND code "std::string_view vocab_bpe() {\n  return {reinterpret_cast<const char*>(k_vocab_bpe), sizeof k_vocab_bpe};\n}\n\n")
string(APPEND code "}  // namespace attn::gpt2_detail\n")
file(WRITE "${OUT}.tmp" "${code}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
