#!/usr/bin/env python3
"""The share of a sample's words that are words of the corpus the model was trained on: a plain
measure of whether a small model writes words or letter soup. A word is a run of letters (an
inner apostrophe kept: "LORD's"), compared case-insensitively; the prompt, if given, is left out.

  python3 scripts/corpus_words.py CORPUS.txt SAMPLE.txt [--prompt "And God said"] [--min 0.85]

Prints "words: 212 of 230 (92.2%) are words of CORPUS.txt" and, with --min, exits 1 below it.
Standard library only.
"""
import argparse
import re
import sys

WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")


def words(text):
    return [w.lower() for w in WORD.findall(text)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpus")
    p.add_argument("sample", help="the sample text ('-' for stdin)")
    p.add_argument("--prompt", default="", help="text the sample starts with, left out of the count")
    p.add_argument("--min", type=float, default=None, help="exit 1 when the share is below this (0..1)")
    a = p.parse_args()
    with open(a.corpus, encoding="utf-8", errors="replace") as f:
        known = set(words(f.read()))
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
