#!/usr/bin/env python3
"""Writes a deterministic random-weight BertForMaskedLM folder (config.json, vocab.txt,
tokenizer_config.json, model.safetensors) for tests and benchmarks.

Pure Python (no numpy needed: CI machines may lack it) for the small test model, so its
bytes -- and the sha256 the encoder goldens record -- never depend on a library version.
`--numpy` draws with numpy instead: only for the big benchmark model, whose bytes nobody checks.

The weights are scaled (unlike BERT's 0.02 init) so attention is far from uniform and the
untied decoder with a negative bias gives sparse SPLADE vectors, as a trained model would.

  python3 tools/make_random_model.py --out cache/rand-h96                # test model, F32
  python3 tools/make_random_model.py --out cache/rand-h96-f16 --dtype F16
  python3 tools/make_random_model.py --out cache/rand-bert-base --layers 12 --hidden 768 \
      --heads 12 --intermediate 3072 --numpy                              # benchmark model
"""
import argparse
import array
import hashlib
import json
import math
import os
import random
import shutil
import struct
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tensor_list(a):
    """(name, shape, kind) in a fixed order; kind picks the distribution."""
    H, I, V = a.hidden, a.intermediate, a.vocab
    out = [("bert.embeddings.word_embeddings.weight", [V, H], "emb"),
           ("bert.embeddings.position_embeddings.weight", [a.max_position, H], "emb"),
           ("bert.embeddings.token_type_embeddings.weight", [2, H], "emb"),
           ("bert.embeddings.LayerNorm.weight", [H], "gamma"),
           ("bert.embeddings.LayerNorm.bias", [H], "beta")]
    for l in range(a.layers):
        p = "bert.encoder.layer.%d." % l
        for n in ("query", "key", "value"):
            out += [(p + "attention.self.%s.weight" % n, [H, H], "w"),
                    (p + "attention.self.%s.bias" % n, [H], "b")]
        out += [(p + "attention.output.dense.weight", [H, H], "w"),
                (p + "attention.output.dense.bias", [H], "b"),
                (p + "attention.output.LayerNorm.weight", [H], "gamma"),
                (p + "attention.output.LayerNorm.bias", [H], "beta"),
                (p + "intermediate.dense.weight", [I, H], "w"),
                (p + "intermediate.dense.bias", [I], "b"),
                (p + "output.dense.weight", [H, I], "w"),
                (p + "output.dense.bias", [H], "b"),
                (p + "output.LayerNorm.weight", [H], "gamma"),
                (p + "output.LayerNorm.bias", [H], "beta")]
    out += [("cls.predictions.transform.dense.weight", [H, H], "w"),
            ("cls.predictions.transform.dense.bias", [H], "b"),
            ("cls.predictions.transform.LayerNorm.weight", [H], "gamma"),
            ("cls.predictions.transform.LayerNorm.bias", [H], "beta"),
            ("cls.predictions.decoder.weight", [V, H], "w"),
            ("cls.predictions.bias", [V], "vbias")]
    return out


def params(kind, shape, a):
    """(mean, std) of each kind of tensor."""
    fan_in = shape[-1]
    return {"emb": (0.0, 0.5), "gamma": (1.0, 0.1), "beta": (0.0, 0.1),
            "w": (0.0, 1.0 / math.sqrt(fan_in)), "b": (0.0, 0.1),
            "vbias": (a.vocab_bias, 0.5)}[kind]


def draw_python(rng, n, mean, std):
    return array.array("f", (rng.gauss(mean, std) for _ in range(n)))


def encode(values, dtype):
    """float32 array -> little-endian bytes of dtype (round to nearest even)."""
    if dtype == "F32":
        if sys.byteorder != "little":
            values.byteswap()
        return values.tobytes()
    if dtype == "F16":
        return struct.pack("<%de" % len(values), *values)
    raw = array.array("I", values.tobytes())  # BF16: top half of the float32 bits, rounded
    out = array.array("H", (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF for u in raw))
    if sys.byteorder != "little":
        out.byteswap()
    return out.tobytes()


def draw_numpy(rng, n, mean, std, dtype):
    import numpy as np
    x = rng.standard_normal(n, dtype=np.float32) * np.float32(std) + np.float32(mean)
    if dtype == "F16":
        return x.astype("<f2").tobytes()
    if dtype == "BF16":
        u = x.view(np.uint32).astype(np.uint64)
        return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")).tobytes()
    return x.astype("<f4").tobytes()


def write_safetensors(path, tensors, a):
    header, blobs, off = {}, [], 0
    if a.numpy:
        import numpy as np
        rng = np.random.default_rng(a.seed)
    else:
        rng = random.Random(a.seed)
    esize = {"F32": 4, "F16": 2, "BF16": 2}[a.dtype]
    for name, shape, kind in tensors:
        n = math.prod(shape)
        mean, std = params(kind, shape, a)
        if a.numpy:
            blob = draw_numpy(rng, n, mean, std, a.dtype)
        else:
            blob = encode(draw_python(rng, n, mean, std), a.dtype)
        assert len(blob) == n * esize
        names = [name]
        if name == "cls.predictions.bias":
            # transformers 5 reads an untied decoder's own bias; older versions read this one.
            # Both names, same values (separate copies: safetensors ranges may not overlap).
            names.append("cls.predictions.decoder.bias")
        for nm in names:
            header[nm] = {"dtype": a.dtype, "shape": shape, "data_offsets": [off, off + len(blob)]}
            blobs.append(blob)
            off += len(blob)
    header["__metadata__"] = {"format": "pt", "generator": "tools/make_random_model.py seed=%d" % a.seed}
    h = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    h += b" " * (-len(h) % 8)  # data block 8-byte aligned, as the safetensors writer does
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=96)
    ap.add_argument("--heads", type=int, default=3)
    ap.add_argument("--intermediate", type=int, default=200)
    ap.add_argument("--max-position", type=int, default=512)
    ap.add_argument("--vocab-bias", type=float, default=-4.0,
                    help="mean decoder bias: more negative gives sparser vectors")
    ap.add_argument("--dtype", choices=["F32", "F16", "BF16"], default="F32")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--numpy", action="store_true", help="fast numpy RNG (benchmark models)")
    ap.add_argument("--shared", default=os.path.join(REPO, "..", "shared"))
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    bert = os.path.join(a.shared, "data", "bert-base-uncased")
    vocab = os.path.join(bert, "vocab.txt")
    if not os.path.exists(vocab):
        sys.exit("make_random_model: %s not found (pass --shared DIR)" % vocab)
    with open(vocab, encoding="utf-8") as f:
        a.vocab = sum(1 for _ in f)
    os.makedirs(a.out, exist_ok=True)
    config = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_act": "gelu",
              "hidden_size": a.hidden, "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
              "intermediate_size": a.intermediate, "max_position_embeddings": a.max_position,
              "type_vocab_size": 2, "vocab_size": a.vocab, "pad_token_id": 0,
              "layer_norm_eps": 1e-12, "tie_word_embeddings": False,
              "position_embedding_type": "absolute", "attention_probs_dropout_prob": 0.1,
              "hidden_dropout_prob": 0.1, "initializer_range": 0.02}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    shutil.copyfile(vocab, os.path.join(a.out, "vocab.txt"))
    shutil.copyfile(os.path.join(bert, "tokenizer_config.json"), os.path.join(a.out, "tokenizer_config.json"))
    st = os.path.join(a.out, "model.safetensors")
    write_safetensors(st, tensor_list(a), a)
    with open(st, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if not a.quiet:
        print("%s: %s %d bytes sha256 %s" % (st, a.dtype, os.path.getsize(st), digest))


if __name__ == "__main__":
    main()
