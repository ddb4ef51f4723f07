"""nanodist's tokenizers in Python, read from the text of a tokenizer file (data/char_tokenizer.cpp,
data/bpe_tokenizer.cpp, data/pretokenize.cpp give the formats and rules this follows).

  char: "nanodist-tokenizer char", "vocab_size N", then lines "id byte \"text\"": id i is that byte.
  bpe:  "nanodist-tokenizer bpe", "vocab_size N", "merges M", then lines "new_id left right \"bytes\"":
        ids 0..255 are bytes; merge i joins (left, right) into 256 + i. Text is pre-split into
        GPT-2-style chunks and merges apply inside a chunk, lowest rank first, left to right.
Lines starting with '#' are comments.
"""

TAG = "nanodist-tokenizer"


def _fields(text):
    """The non-comment lines after the tag line, split on whitespace."""
    lines = text.split("\n")
    kind_line = lines[0].split()
    if len(kind_line) != 2 or kind_line[0] != TAG:
        raise ValueError(f"not a nanodist tokenizer file: first line {lines[0]!r}")
    rows = [line.split() for line in lines[1:] if line and not line.startswith("#")]
    return kind_line[1], rows


def load_tokenizer(text):
    kind, rows = _fields(text)
    if kind == "char":
        return CharTokenizer(rows)
    if kind == "bpe":
        return BpeTokenizer(rows)
    if kind == "ids":
        return IdTokenizer(rows)
    raise ValueError(f"unknown tokenizer kind {kind!r}")


class CharTokenizer:
    def __init__(self, rows):
        if not rows or rows[0][0] != "vocab_size":
            raise ValueError("char tokenizer: expected a 'vocab_size N' line")
        vocab_size = int(rows[0][1])
        self.symbols = []
        for row in rows[1:]:
            if int(row[0]) != len(self.symbols):
                raise ValueError(f"char tokenizer: id {row[0]} out of order")
            self.symbols.append(int(row[1]))
        if len(self.symbols) != vocab_size:
            raise ValueError(f"char tokenizer: {len(self.symbols)} symbols but vocab_size {vocab_size}")
        self.id_of_byte = {b: i for i, b in enumerate(self.symbols)}
        self.vocab_size = vocab_size

    def encode(self, text):
        data = text.encode("utf-8")
        missing = sorted({b for b in data if b not in self.id_of_byte})
        if missing:
            raise ValueError(f"bytes {missing} are not in the character vocabulary")
        return [self.id_of_byte[b] for b in data]

    def decode_bytes(self, ids):
        return bytes(self.symbols[i] for i in ids)


def _byte_class(c):
    if c >= 0x80 or 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A:
        return "letter"
    if 0x30 <= c <= 0x39:
        return "digit"
    if c in b" \t\n\v\f\r":
        return "space"
    return "other"


def _chunk_length(data, i):
    n = len(data)
    if data[i] == ord("'") and i + 1 < n:  # contractions 's 't 'm 'd 're 've 'll
        a = chr(data[i + 1])
        if a in "stmd":
            return 2
        if i + 2 < n and a + chr(data[i + 2]) in ("re", "ve", "ll"):
            return 3
    start = i
    if data[i] == ord(" ") and i + 1 < n and _byte_class(data[i + 1]) != "space":
        start = i + 1
    run_class = _byte_class(data[start])
    if run_class != "space":
        end = start + 1
        while end < n and _byte_class(data[end]) == run_class:
            end += 1
        return end - i
    end = i + 1
    while end < n and _byte_class(data[end]) == "space":
        end += 1
    if end < n and end - i > 1:  # a whitespace run before a non-space leaves its last byte
        end -= 1
    return end - i


def split_into_chunks(data):
    chunks, i = [], 0
    while i < len(data):
        length = _chunk_length(data, i)
        chunks.append(data[i:i + length])
        i += length
    return chunks


class BpeTokenizer:
    def __init__(self, rows):
        header = {}
        while rows and rows[0][0] in ("vocab_size", "merges") and len(header) < 2:
            header[rows[0][0]] = int(rows[0][1])
            rows = rows[1:]
        if set(header) != {"vocab_size", "merges"}:
            raise ValueError("bpe tokenizer: expected 'vocab_size N' and 'merges M' lines")
        self.token_bytes = [bytes([b]) for b in range(256)]
        self.rank_of_pair = {}
        for row in rows:
            new_id, left, right = int(row[0]), int(row[1]), int(row[2])
            if new_id != len(self.token_bytes) or not (0 <= left < new_id and 0 <= right < new_id):
                raise ValueError(f"bpe tokenizer: bad merge line {' '.join(row)}")
            self.rank_of_pair[(left, right)] = new_id - 256
            self.token_bytes.append(self.token_bytes[left] + self.token_bytes[right])
        if len(self.rank_of_pair) != header["merges"] or len(self.token_bytes) != header["vocab_size"]:
            raise ValueError("bpe tokenizer: merge count does not match the header")
        self.vocab_size = len(self.token_bytes)

    def _encode_chunk(self, chunk):
        ids = list(chunk)
        while len(ids) > 1:
            ranks = [self.rank_of_pair.get(pair) for pair in zip(ids, ids[1:])]
            best = min((r for r in ranks if r is not None), default=None)
            if best is None:
                return ids
            merged, i = [], 0
            while i < len(ids):
                if i + 1 < len(ids) and ranks[i] == best:  # non-overlapping, left to right
                    merged.append(256 + best)
                    i += 2
                else:
                    merged.append(ids[i])
                    i += 1
            ids = merged
        return ids

    def encode(self, text):
        out = []
        for chunk in split_into_chunks(text.encode("utf-8")):
            out.extend(self._encode_chunk(chunk))
        return out

    def decode_bytes(self, ids):
        return b"".join(self.token_bytes[i] for i in ids)


class IdTokenizer:
    def __init__(self, rows):
        if len(rows) != 1 or len(rows[0]) != 2 or rows[0][0] != "vocab_size" or int(rows[0][1]) < 1:
            raise ValueError("ids tokenizer: expected exactly one 'vocab_size N' line, N >= 1")
        self.vocab_size = int(rows[0][1])

    def encode(self, text):
        words = text.split()
        bad = [w for w in words if not w.isascii() or not w.isdigit() or int(w) >= self.vocab_size]
        if bad:
            raise ValueError(f"{bad[:5]} are not token ids below {self.vocab_size}")
        return [int(w) for w in words]

    def decode_bytes(self, ids):
        return " ".join(str(i) for i in ids).encode("ascii")
