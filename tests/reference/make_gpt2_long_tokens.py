#!/usr/bin/env python3
"""GPT-2's token ids of texts with long pieces (over 64 bytes: no white space, punctuation or
change of class in them), for the tokenizer's test of its BPE on long pieces.

The ids come from the same encoder.py algorithm as make_gpt2_tokens.py (imported from it), whose
BPE scans a piece once per merge: a few seconds here for these texts. Needs Debian's
python3-regex (not the tests). Run from the repository's root:
    /usr/bin/python3 tests/reference/make_gpt2_long_tokens.py
It writes data/reference/gpt2_long_tokens.json.
"""

import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_gpt2_tokens import get_encoder, re, write_cases  # noqa: E402

OUT = "data/reference/gpt2_long_tokens.json"


def texts(seed=65):
    rng = random.Random(seed)
    lower = "abcdefghijklmnopqrstuvwxyz"
    out = [
        "a" * 65, "a" * 200, "a" * 1000, "ab" * 500, "abc" * 333, "aab" * 300,
        " " + "a" * 300, "x" * 64 + " " + "y" * 65,
        " " * 100, " " * 100 + "a", "\n" * 200, "\t" * 70 + "x", "\r\n" * 80,
        "1" * 100, "0123456789" * 40, " " + "9" * 500,
        "!" * 100, "?!" * 120, "." * 300, "-" * 80 + ">", "=" * 66,
        "é" * 100, "ñandú" * 40, "中" * 100, "日本語のテキスト" * 30, "😀" * 40, "Ω" * 70,
        "Supercalifragilisticexpialidocious" * 10,
        "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch" * 5,
    ]
    for n in (65, 100, 300, 1000, 3000):
        out.append("".join(rng.choice(lower) for _ in range(n)))
    for n in (80, 500, 2000):
        out.append("".join(rng.choice(lower + lower.upper()) for _ in range(n)))
    for n in (120, 700):
        out.append("".join(rng.choice("aeiou" * 3 + "bcdfghklmnprstvz") for _ in range(n)))
    # Long pieces among short ones.
    for _ in range(6):
        parts = []
        for _ in range(rng.randint(3, 8)):
            if rng.random() < 0.4:
                parts.append("".join(rng.choice(lower) for _ in range(rng.randint(65, 400))))
            else:
                parts.append(rng.choice(["the", "cat", "'s", "42", "!!", "é", "中文"]))
        out.append(rng.choice([" ", "  ", "\n", ", "]).join(parts))
    return out


def main():
    enc = get_encoder()
    cases = [{"text": s, "ids": enc.encode(s)} for s in texts()]
    write_cases(OUT, {"generator": "tests/reference/make_gpt2_long_tokens.py: OpenAI's encoder.py "
                                   f"algorithm, Python regex {re.__version__}"}, cases)


if __name__ == "__main__":
    main()
