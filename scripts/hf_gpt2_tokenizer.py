"""nanodist's char and byte-level BPE tokenizers written as Hugging Face GPT-2 tokenizer files
(vocab.json, merges.txt, tokenizer_config.json), which GPT2Tokenizer / GPT2TokenizerFast /
AutoTokenizer load.

Why this maps: GPT-2's tokenizer is byte-level BPE. Each byte is shown as one printable unicode
character (bytes_to_unicode below), a token is the string of its bytes' characters, vocab.json maps
those strings to ids, and merges.txt lists the merges in rank order.
  - char: every id is one byte and nothing merges: vocab.json holds one single-character string per
    id and merges.txt is empty, so encoding is byte for byte, exactly as nanodist's.
  - bpe: ids 0..255 are the bytes, merge i makes id 256 + i from (left, right) with rank i; both
    sides apply the lowest-rank merge first, inside pre-split chunks. nanodist's pre-split rules
    follow GPT-2's pattern on ASCII text; on non-ASCII text they differ (nanodist counts every byte
    >= 0x80 as a letter, GPT-2 uses unicode classes), so ids can differ there.
  - ids (random token streams) and runs without a tokenizer have no text form: nothing is written.
"""
import json
import os

from nanodist_tokenizer import load_tokenizer


def bytes_to_unicode():
    """byte -> printable character: printable Latin-1 bytes stand for themselves, the others
    (controls, space, 0x7f-0xa0, 0xad) take the characters from U+0100 on, in byte order."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def token_strings(tokenizer):
    """The vocab.json key of every id, in id order."""
    chars = bytes_to_unicode()
    if hasattr(tokenizer, "symbols"):  # char
        return [chars[b] for b in tokenizer.symbols]
    return ["".join(chars[b] for b in token) for token in tokenizer.token_bytes]


def write_gpt2_tokenizer(tokenizer_text, out_dir, model_max_length):
    """Writes the files; returns a sentence for the export's README, or raises ValueError when the
    tokenizer has no GPT-2 form."""
    tokenizer = load_tokenizer(tokenizer_text)
    kind = tokenizer_text.split("\n", 1)[0].split()[1]
    if kind not in ("char", "bpe"):
        raise ValueError(f"a {kind!r} tokenizer has no text form")
    strings = token_strings(tokenizer)
    if len(set(strings)) != len(strings):
        raise ValueError("two ids stand for the same bytes, which vocab.json cannot express")
    merges = []
    if kind == "bpe":
        by_rank = sorted(tokenizer.rank_of_pair.items(), key=lambda item: item[1])
        merges = [f"{strings[left]} {strings[right]}" for (left, right), _ in by_rank]
    with open(os.path.join(out_dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({s: i for i, s in enumerate(strings)}, f, ensure_ascii=False)
    with open(os.path.join(out_dir, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(m + "\n" for m in merges))
    config = {
        "tokenizer_class": "GPT2Tokenizer",
        "model_max_length": model_max_length,
        "add_prefix_space": False,
        "add_bos_token": False,
        "errors": "replace",
        "clean_up_tokenization_spaces": False,
        # nanodist's tokenizers have no special tokens.
        "bos_token": None,
        "eos_token": None,
        "unk_token": None,
        "pad_token": None,
    }
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return (f"GPT-2 style {kind} tokenizer: vocab.json ({len(strings)} tokens) and merges.txt "
            f"({len(merges)} merges)")
