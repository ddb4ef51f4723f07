#!/usr/bin/env python3
"""The share of a sample's words that are words of the corpus the model was trained on: a plain
measure of whether a small model writes words or letter soup. A word is a run of letters (an
inner apostrophe kept: "LORD's"), compared case-insensitively; the prompt, if given, is left out.

  python3 scripts/corpus_words.py CORPUS SAMPLE.txt [--prompt "And God said"] [--min 0.85]

CORPUS is a text file or a data directory made by `nanodist prepare` (its train.bin and val.bin
decoded with its tokenizer.txt). Prints "words: 212 of 230 (92.2%) are words of CORPUS" and,
with --min, exits 1 below it. Standard library only.
"""
import argparse
import array
import os
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nanodist_tokenizer import load_tokenizer  # noqa: E402

WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")


def words(text):
    return [w.lower() for w in WORD.findall(text)]


def corpus_text(path):
    """A text file's text, or the text of a prepared data directory (docs/DESIGN.md: a token file is
    256 int32 of header, magic, version, vocabulary, token width, count, then the tokens)."""
    if not os.path.isdir(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    with open(os.path.join(path, "tokenizer.txt"), encoding="utf-8") as f:
        tokenizer = load_tokenizer(f.read())
    text = b""
    for name in ("train.bin", "val.bin"):
        with open(os.path.join(path, name), "rb") as f:
            header = struct.unpack("<256i", f.read(1024))
            width, count = header[3], header[4]
            ids = array.array({2: "H", 4: "I"}[width])
            ids.frombytes(f.read(width * count))
            if sys.byteorder != "little":
                ids.byteswap()
        text += tokenizer.decode_bytes(ids.tolist())
    return text.decode("utf-8", errors="replace")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpus")
    p.add_argument("sample", help="the sample text ('-' for stdin)")
    p.add_argument("--prompt", default="", help="text the sample starts with, left out of the count")
    p.add_argument("--min", type=float, default=None, help="exit 1 when the share is below this (0..1)")
    a = p.parse_args()
    known = set(words(corpus_text(a.corpus)))
    sample = sys.stdin.read() if a.sample == "-" else open(a.sample, encoding="utf-8", errors="replace").read()
    if a.prompt and sample.startswith(a.prompt):
        sample = sample[len(a.prompt):]
    found = words(sample)
    if not found:
        sys.exit("corpus_words.py: error: the sample holds no words")
    hits = sum(w in known for w in found)
    share = hits / len(found)
    print(f"words: {hits} of {len(found)} ({100 * share:.1f}%) are words of {a.corpus}")
    if a.min is not None and share < a.min:
        sys.exit(1)


if __name__ == "__main__":
    main()
