#!/usr/bin/env python3
"""GPT-2's token ids of a few hundred varied strings, for the tokenizer's test.

The ids come from OpenAI's encoder.py algorithm (github.com/openai/gpt-2, src/encoder.py: the
pattern with Python's `regex` module, bytes_to_unicode, BPE by merge rank), written out below,
over data/gpt2/encoder.json and vocab.bpe. Also written: the code points that the pattern's
\\p{L}, \\p{N} and \\s match, as `regex` has them, so that the test can check every character.

Needs Debian's python3-regex (not the tests). Run from the repository's root:
    /usr/bin/python3 tests/reference/make_gpt2_tokens.py
It writes data/reference/gpt2_tokens.json.
"""

import json
import random
from functools import lru_cache

import regex as re

DATA = "data/gpt2"
OUT = "data/reference/gpt2_tokens.json"


# ---- encoder.py's algorithm ----

@lru_cache()
def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(2**8):
        if b not in bs:
            bs.append(b)
            cs.append(2**8 + n)
            n += 1
    return dict(zip(bs, [chr(n) for n in cs]))


def get_pairs(word):
    pairs = set()
    prev_char = word[0]
    for char in word[1:]:
        pairs.add((prev_char, char))
        prev_char = char
    return pairs


class Encoder:
    def __init__(self, encoder, bpe_merges):
        self.encoder = encoder
        self.byte_encoder = bytes_to_unicode()
        self.bpe_ranks = dict(zip(bpe_merges, range(len(bpe_merges))))
        self.cache = {}
        self.pat = re.compile(
            r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = tuple(token)
        pairs = get_pairs(word)
        if not pairs:
            return token
        while True:
            bigram = min(pairs, key=lambda pair: self.bpe_ranks.get(pair, float("inf")))
            if bigram not in self.bpe_ranks:
                break
            first, second = bigram
            new_word = []
            i = 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                    new_word.extend(word[i:j])
                    i = j
                except ValueError:
                    new_word.extend(word[i:])
                    break
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
            if len(word) == 1:
                break
            pairs = get_pairs(word)
        word = " ".join(word)
        self.cache[token] = word
        return word

    def encode(self, text):
        bpe_tokens = []
        for token in re.findall(self.pat, text):
            token = "".join(self.byte_encoder[b] for b in token.encode("utf-8"))
            bpe_tokens.extend(self.encoder[bpe_token] for bpe_token in self.bpe(token).split(" "))
        return bpe_tokens


def get_encoder():
    with open(f"{DATA}/encoder.json", encoding="utf-8") as f:
        encoder = json.load(f)
    with open(f"{DATA}/vocab.bpe", encoding="utf-8") as f:
        bpe_data = f.read()
    bpe_merges = [tuple(merge_str.split()) for merge_str in bpe_data.split("\n")[1:-1]]
    return Encoder(encoder, bpe_merges)


# ---- the strings ----

HANDWRITTEN = [
    "Life is short, eat dessert first",
    " Life is short, eat dessert first",
    "Hello world", "hello  world", "hello   world", "a  b", "a   b   c", "   leading", "trailing   ",
    " ", "  ", "   ", "\n", "\n\n", "a\nb", "a\n\nb", "a \nb", "a\n b", "line one\nline two\n",
    "\t", "a\tb", "a\t\tb", "\tindented", "a \t b", "x\r\ny", "\r\n\r\n",
    "it's", "It's", "IT'S", "he'd", "HE'D", "we're", "WE'RE", "they've", "I'm", "I'M", "we'll",
    "WE'LL", "don't", "DON'T", "can't", "'s", "'S", "'t", "'re", "'ve", "'m", "'ll", "'d", "'x",
    "''s", "a's", "a'S", " 's", "'sss", "O'Neil", "rock'n'roll", "‘curly’ quotes", "it’s",
    "1", "12", "123", "1234", "12345", "3.14159", "1,000,000", "2026-12-01", "v1.2.3",
    " 42", "42 ", "a1b2c3", "Ⅻ", "½ cup", "x²", "٣٤٥", "１２３", "①②③",
    "!", "!!", "!!!", "?!", "...", "…", "--", "---", "==>", "<|endoftext|>", "@user #tag $5 %",
    "(a) [b] {c}", "\"quoted\"", "a,b;c:d", "path/to/file.txt", "https://example.com/a?b=c&d=e",
    "naïve café résumé", "Ångström", "Straße", "Ελληνικά", "Русский текст", "עברית", "العربية",
    "हिन्दी", "नमस्ते", "ไทย", "한국어", "日本語のテキスト", "我爱你", "中文，标点。", "漢字かなカナ",
    "emoji 😀", "😀😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇫🇷", "a😀b",
    "\u0085", "a\u0085b", "a \u0085b", "a\u0085 b", "\u00a0", "a\u00a0b", "a \u00a0b",
    "\ufeff", "\ufeffBOM at start", "a\ufeffb", "a \ufeffb", "\u180e", "a\u180eb",
    "\u200b", "a\u200bb", "a\u200db", "\u2028", "a\u2029b", "\u3000", "a\u3000b", "a\u2003b",
    "\u001c", "a\u001cb", "a\u001fb", "a\u001f b", "\u0001\u0002", "a\u007fb", "\u0000",
    "e\u0301", "cafe\u0301", "\u0301", "x\u20dd",
    "supercalifragilisticexpialidocious",
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "ababababababababababababababab",
    "The quick brown fox jumps over the lazy dog.",
    "def f(x):\n    return x * 2\n",
    "int main() { return 0; }",
    "    four spaces", "\n\n\nthree newlines", "end with newline\n", "end with spaces  ",
    "Mixed English and 中文 and русский and العربية",
    "Tab\tand\nnewline\r\nand\u0085NEL",
    "CamelCaseIdentifier", "snake_case_identifier", "SCREAMING_CASE", "kebab-case-word",
    "e-mail: someone@example.org", "C++ and C#", "$$$", "100%", "#1", "A.B.C.",
]

FRAGMENTS = [
    "the", "The", "cat", "attention", "is", "all", "you", "need", "GPT", "token", "ization",
    "dessert", "Life", "short", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "'s", "'S", "'t",
    "'re", "'ve", "'m", "'ll", "'d", "'", "n't", "0", "7", "42", "2026", "3.5", ",", ".", "!",
    "?", "...", "—", "-", "(", ")", "\"", ":", ";", "/", "\\", "*", "&", "é", "ü", "ñ", "ç",
    "façade", "中", "文", "日本", "한", "😀", "👍🏽", "‍", "👩‍💻", "\u0085", "\u00a0", "\ufeff",
    "\u180e", "\u2003", "\u3000", "Ω", "π", "∑", "→", "½", "²", "Ⅳ", "٣", "ب", "ש", "ก", "अ",
    "\u0301", "x", "y", "z", "Q", "K", "V", "<|endoftext|>", "__init__", "http://", "@", "#",
]


def generated(count, seed=16):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.randint(1, 12)
        out.append("".join(rng.choice(FRAGMENTS) for _ in range(n)))
    return out


def ranges(pattern):
    """The code points a one-character pattern matches, as [first, last] ranges."""
    compiled = re.compile(pattern)
    out = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue  # surrogates: never in UTF-8 text
        if compiled.match(chr(cp)):
            if out and out[-1][1] == cp - 1:
                out[-1][1] = cp
            else:
                out.append([cp, cp])
    return out


def main():
    enc = get_encoder()
    strings = []
    for s in HANDWRITTEN + generated(220):
        if s not in strings:
            strings.append(s)
    cases = [{"text": s, "ids": enc.encode(s)} for s in strings]
    out = {
        "generator": "tests/reference/make_gpt2_tokens.py: OpenAI's encoder.py algorithm, "
                     f"Python regex {re.__version__}",
        "letters": ranges(r"\p{L}"),
        "numbers": ranges(r"\p{N}"),
        "white_space": ranges(r"\s"),
        "cases": cases,
    }
    write_cases(OUT, {key: out[key] for key in ("generator", "letters", "numbers", "white_space")},
                cases)


def write_cases(path, fields, cases):
    """The fields, one a line, then the cases, one a line."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n")
        for key, value in fields.items():
            f.write(f"  {json.dumps(key)}: {json.dumps(value)},\n")
        f.write('  "cases": [\n')
        f.write(",\n".join("    " + json.dumps(c, ensure_ascii=False) for c in cases))
        f.write("\n  ]\n}\n")
    print(f"{path}: {len(cases)} strings, {sum(len(c['ids']) for c in cases)} ids")


if __name__ == "__main__":
    main()
