#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target (tests/fuzz/corpus/<target>/) from real files that
nanodist itself makes: two tiny runs (a char model of vocabulary 8 and a BPE model of vocabulary
280, 1 layer of width 4), their checkpoints, run.conf and Hugging Face export (scripts/export_hf.py),
plus llm.c shards and nanoGPT files written as those projects write them. Each seed is a few KB.

  python3 tests/fuzz/make_corpus.py build/nanodist

Needs numpy and h5py (export_hf.py also safetensors). Rerun it when a format changes; the fuzz
targets' inputs are described at the top of each tests/fuzz/<target>_fuzz.cpp.
"""
import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NEXT_FILE = b"\n==> next file <==\n"  # fuzz_target.h's kNextFile
TEXT = ("the quick brown fox jumps over the lazy dog; a bad cat ate the hot dates. " * 12).encode()
TINY = ["--n-layer", "1", "--n-head", "1", "--n-embd", "4", "--block-size", "8", "--batch-size", "2",
        "--max-iters", "2", "--eval-interval", "0", "--eval-iters", "1", "--warmup-iters", "1", "--threads", "1"]


def run(*args):
    subprocess.run([str(a) for a in args], check=True, stdout=subprocess.DEVNULL)


WORK = tempfile.mkdtemp(prefix="nanodist_corpus_")


def put(target, name, data):
    data = data.replace(WORK.encode(), b"/tmp/corpus")  # run.conf and /config name the data's paths
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def tiny_run(nanodist, work, name, text, tokenizer_flags):
    """prepare + a 2-step train; returns (data dir, run dir)."""
    source = os.path.join(work, name + ".txt")
    with open(source, "wb") as f:
        f.write(text)
    data, out = os.path.join(work, name + "_data"), os.path.join(work, name + "_out")
    run(nanodist, "prepare", "--input", source, "--out", data, *tokenizer_flags)
    run(nanodist, "train", "--data", data, "--out", out, *TINY)
    return data, out


def checkpoint_seed(run_dir):
    """The four files checkpoint_fuzz.cpp takes: slice table, part 0, /config lines, /tokenizer.
    The part keeps only the slices' bytes (the reader preads them), the table's offsets moved to match."""
    import h5py
    index = sorted(f for f in os.listdir(run_dir) if f.startswith("ckpt_") and f.endswith(".h5"))[-1]
    with h5py.File(os.path.join(run_dir, index), "r") as f:
        table = f["/slices"][()].decode()
        config = []
        for key, value in f["/config"].attrs.items():
            value = value.decode() if isinstance(value, bytes) else value
            config.append("%s = %s" % (key, value.item() if hasattr(value, "item") else value))
        tokenizer = f["/tokenizer"][()].decode()
    part_bytes, lines = b"", []
    for line in table.splitlines():
        fields = line.split("\t")
        count = 1
        for d in fields[5].split(","):
            count *= int(d) if d else 1
        with open(os.path.join(run_dir, fields[2]), "rb") as part:
            part.seek(int(fields[8]))
            data = part.read(4 * count)
        fields[2] = "ckpt_000001.parts/rank_00000.h5"  # where checkpoint_fuzz.cpp writes part 0
        fields[8] = str(len(part_bytes))
        part_bytes += data
        lines.append("\t".join(fields))
    return NEXT_FILE.join([("\n".join(lines) + "\n").encode(), part_bytes, ("\n".join(config) + "\n").encode(),
                           tokenizer.encode()])


def safetensors_bytes(tensors):
    """name -> (dtype, shape, raw bytes), laid out as the format says."""
    header, body = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(text)) + text + body


def llmc_shard(magic, version, tokens, width):
    header = struct.pack("<3i", magic, version, len(tokens)) + b"\0" * (1024 - 12)
    return header + b"".join(struct.pack("<H" if width == 2 else "<I", t) for t in tokens)


def main():
    nanodist = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "nanodist"))
    shutil.rmtree(os.path.join(HERE, "corpus"), ignore_errors=True)
    work = WORK
    try:
        # A char run whose vocabulary is 8 (hf_config_fuzz.cpp's fixed weights have this shape).
        char_data, char_out = tiny_run(nanodist, work, "char", b"abcdefg\n" * 40 + b"badcafe\n" * 20, [])
        bpe_data, bpe_out = tiny_run(nanodist, work, "bpe", TEXT, ["--tokenizer", "bpe", "--vocab-size", "280"])
        ids_data = os.path.join(work, "ids_data")
        run(nanodist, "prepare", "--random-tokens", "300", "--vocab-size", "65", "--out", ids_data)
        char_hf, bpe_hf = os.path.join(work, "char_hf"), os.path.join(work, "bpe_hf")
        for out, hf in ((char_out, char_hf), (bpe_out, bpe_hf)):
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "export_hf.py"), out, hf, "--no-install"],
                           check=True, stdout=subprocess.DEVNULL)
        # GPT-2's files alone (no nanodist_tokenizer.txt beside them) make a tokenizer of kind gpt2.
        gpt2_hf, gpt2_data = os.path.join(work, "gpt2_hf"), os.path.join(work, "gpt2_data")
        os.makedirs(gpt2_hf)
        for name in ("config.json", "model.safetensors", "vocab.json", "merges.txt"):
            shutil.copy(os.path.join(bpe_hf, name), gpt2_hf)
        run(nanodist, "prepare", "--input", os.path.join(work, "bpe.txt"), "--out", gpt2_data, "--tokenizer-from", gpt2_hf)

        # nanodist's own files.
        for name, data in (("char", char_data), ("bpe", bpe_data), ("ids", ids_data), ("gpt2", gpt2_data)):
            put("tokenizer", name + ".txt", read(os.path.join(data, "tokenizer.txt")))
        put("token_file", "char_val.bin", read(os.path.join(char_data, "val.bin")))
        put("token_file", "ids_val.bin", read(os.path.join(ids_data, "val.bin")))
        put("checkpoint", "char.ckpt", checkpoint_seed(char_out))
        put("config", "run.conf", read(os.path.join(char_out, "run.conf")))
        put("config", "shakespeare_char.conf", read(os.path.join(ROOT, "configs", "shakespeare_char.conf")))
        for name in ("deep_norm_residual", "formats"):
            put("experiment", name + ".conf", read(os.path.join(ROOT, "configs", "experiments", name + ".conf")))

        # Hugging Face files, as export_hf.py writes them.
        put("hf_config", "config.json", read(os.path.join(char_hf, "config.json")))
        weights = read(os.path.join(char_hf, "model.safetensors"))
        put("safetensors", "char_f32.safetensors", weights)
        header_size = struct.unpack("<Q", weights[:8])[0]
        header = json.loads(weights[8:8 + header_size])
        body = weights[8 + header_size:]
        halves = {}
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            begin, end = entry["data_offsets"]
            floats = struct.unpack("<%df" % ((end - begin) // 4), body[begin:end])
            # bf16: the high half of each f32; f16 by struct's 'e' format.
            raw = (b"".join(struct.pack("<f", x)[2:] for x in floats) if len(halves) % 2 == 0
                   else struct.pack("<%de" % len(floats), *floats))
            halves[name] = ("BF16" if len(halves) % 2 == 0 else "F16", entry["shape"], raw)
        put("safetensors", "char_half.safetensors", safetensors_bytes(halves))
        vocab, merges = read(os.path.join(bpe_hf, "vocab.json")), read(os.path.join(bpe_hf, "merges.txt"))
        put("hf_vocab_merges", "bpe", vocab + NEXT_FILE + merges)
        merge_lines = [m for m in merges.decode().splitlines() if m and not m.startswith("#version")]
        for name, listed in (("strings", merge_lines), ("pairs", [m.split(" ") for m in merge_lines])):
            document = {"version": "1.0", "added_tokens": [], "model": {
                "type": "BPE", "vocab": json.loads(vocab), "merges": listed}}
            put("hf_tokenizer_json", name + ".json", json.dumps(document).encode())

        # Files of other projects, as they write them.
        put("llmc_shard", "gpt2.bin", llmc_shard(20240520, 1, [15496, 11, 995, 50256] * 8, 2))
        put("llmc_shard", "llama3.bin", llmc_shard(20240801, 7, [128000, 9906, 11, 1917] * 8, 4))
        chars = sorted(set(TEXT.decode()))
        stoi = {c: i for i, c in enumerate(chars)}
        put("nanogpt_raw", "train.bin", b"".join(struct.pack("<H", stoi[c]) for c in TEXT.decode()[:200]))
        meta = {"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}
        put("nanogpt_meta", "meta_protocol4.pkl", pickle.dumps(meta, protocol=4))
        put("nanogpt_meta", "meta_protocol2.pkl", pickle.dumps(meta, protocol=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
