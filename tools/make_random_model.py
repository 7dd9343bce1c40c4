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

Other architectures and folder layouts (tests/test_models.c, tools/make_model_goldens.py):
  --arch distilbert         DistilBertForMaskedLM names and config (no token types)
  --tie                     tied decoder (no decoder weight in the file)
  --vocab-size N            bert-base-uncased's vocabulary extended to N tokens with tokens of
                            several scripts (multilingual stand-in: ids above 65,535)
  --pooling / --activation  a sentence-transformers folder: modules.json + 1_SpladePooling
  --idf                     idf.json beside the model (OpenSearch doc-only layout)
  --router                  sentence-transformers Router folder: query -> SparseStaticEmbedding
                            (query_0_SparseStaticEmbedding), document -> MLM + SpladePooling

The real models' own files, where present (tools/fetch_real_tokenizers.py, data/README.md):
  --tokenizer-json FILE     the model's tokenizer.json: its vocabulary, copied as is (no vocab.txt) with
                            a tokenizer_config.json that states its normalizer's settings
  --vocab-txt FILE[.gz]     a vocabulary file instead of bert-base-uncased's (committed excerpts)
  --idf-file FILE           the model's idf.json: copied (--idf), or the query table (--router), mapped
                            to ids as SparseStaticEmbedding.from_json does
  --config-json FILE        the model's config.json, written instead of the generated one (the shapes
                            the options give must be its shapes)
  --pooling-json FILE       the model's SpladePooling config.json, written as is
  --tokenizer-config FILE   the model's tokenizer_config.json, written as is (beside --tokenizer-json)
"""
import argparse
import array
import gzip
import hashlib
import json
import math
import os
import random
import shutil
import struct
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def distilbert_tensors(a):
    H, I, V = a.hidden, a.intermediate, a.vocab
    p = "distilbert."
    out = [(p + "embeddings.word_embeddings.weight", [V, H], "emb"),
           (p + "embeddings.position_embeddings.weight", [a.max_position, H], "emb"),
           (p + "embeddings.LayerNorm.weight", [H], "gamma"),
           (p + "embeddings.LayerNorm.bias", [H], "beta")]
    for l in range(a.layers):
        q = p + "transformer.layer.%d." % l
        for n in ("q_lin", "k_lin", "v_lin", "out_lin"):
            out += [(q + "attention.%s.weight" % n, [H, H], "w"), (q + "attention.%s.bias" % n, [H], "b")]
        out += [(q + "sa_layer_norm.weight", [H], "gamma"), (q + "sa_layer_norm.bias", [H], "beta"),
                (q + "ffn.lin1.weight", [I, H], "w"), (q + "ffn.lin1.bias", [I], "b"),
                (q + "ffn.lin2.weight", [H, I], "w"), (q + "ffn.lin2.bias", [H], "b"),
                (q + "output_layer_norm.weight", [H], "gamma"), (q + "output_layer_norm.bias", [H], "beta")]
    out += [("vocab_transform.weight", [H, H], "w"), ("vocab_transform.bias", [H], "b"),
            ("vocab_layer_norm.weight", [H], "gamma"), ("vocab_layer_norm.bias", [H], "beta")]
    if not a.tie:
        out.append(("vocab_projector.weight", [V, H], "w"))
    out.append(("vocab_projector.bias", [V], "vbias"))
    return out


def tensor_list(a):
    """(name, shape, kind) in a fixed order; kind picks the distribution."""
    if a.arch == "distilbert":
        return distilbert_tensors(a)
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
    if a.tie:
        out = [t for t in out if t[0] != "cls.predictions.decoder.weight"]
    return out


def params(kind, shape, a):
    """(mean, std) of each kind of tensor."""
    fan_in = shape[-1]
    return {"emb": (0.0, a.emb_std), "gamma": (1.0, 0.1), "beta": (0.0, 0.1),
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
        if name == "cls.predictions.bias" and not a.tie:
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
    ap.add_argument("--emb-std", type=float, default=0.5,
                    help="std of the embeddings (the tied decoder): smaller keeps big models' logits moderate")
    ap.add_argument("--dtype", choices=["F32", "F16", "BF16"], default="F32")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--numpy", action="store_true", help="fast numpy RNG (benchmark models)")
    ap.add_argument("--shared", default=os.environ.get("SPLADE_SHARED", os.path.join(REPO, "..", "shared")),
                    help="the folder beside the project (default $SPLADE_SHARED, else ../shared)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--arch", choices=["bert", "distilbert"], default="bert")
    ap.add_argument("--tie", action="store_true", help="tied decoder (no decoder weight written)")
    ap.add_argument("--vocab-size", type=int, default=0, help="extend the vocabulary to this many tokens")
    ap.add_argument("--pooling", choices=["max", "sum"], help="write a sentence-transformers folder")
    ap.add_argument("--activation", choices=["relu", "log1p_relu"], default="relu")
    ap.add_argument("--idf", action="store_true", help="write idf.json (OpenSearch doc-only layout)")
    ap.add_argument("--router", action="store_true", help="sentence-transformers Router (doc-only) layout")
    ap.add_argument("--tokenizer-json", help="the model's real tokenizer.json (its vocabulary and normalizer)")
    ap.add_argument("--vocab-txt", help="vocabulary file (.gz read too) instead of bert-base-uncased's")
    ap.add_argument("--idf-file", help="the model's real idf.json")
    ap.add_argument("--config-json", help="the model's real config.json (same shapes)")
    ap.add_argument("--pooling-json", help="the model's real SpladePooling config.json")
    ap.add_argument("--tokenizer-config", help="the model's real tokenizer_config.json")
    a = ap.parse_args()
    bert = os.path.join(a.shared, "data", "bert-base-uncased")
    vocab = a.vocab_txt or os.path.join(bert, "vocab.txt")
    if a.tokenizer_json:
        with open(a.tokenizer_json, encoding="utf-8") as f:
            v = json.load(f)["model"]["vocab"]
        tokens = sorted(v, key=v.get)
    elif not os.path.exists(vocab):
        sys.exit("make_random_model: %s not found (pass --shared DIR)" % vocab)
    else:
        with (gzip.open if vocab.endswith(".gz") else open)(vocab, "rt", encoding="utf-8", newline="\n") as f:
            tokens = f.read().split("\n")[:-1]
    if a.vocab_size:
        tokens = extend_vocab(tokens, a.vocab_size)
    a.vocab = len(tokens)
    os.makedirs(a.out, exist_ok=True)
    mdir = os.path.join(a.out, "document_0_MLMTransformer") if a.router else a.out
    write_hf_folder(a, mdir, tokens, bert)
    if a.router:
        write_router(a, tokens, bert)
    elif a.pooling:
        write_st_modules(a, a.out)
    if a.idf:
        write_idf(a, os.path.join(a.out, "idf.json"), tokens)


def extend_vocab(tokens, n):
    """bert-base-uncased + deterministic tokens of several scripts (lowercase, no accents, as an
    uncased multilingual vocabulary holds them): words of 1-3 letters and their ## forms."""
    scripts = [(0x430, 0x44F), (0x3B1, 0x3C9), (0x627, 0x64A), (0x915, 0x939), (0x5D0, 0x5EA),
               (0xE01, 0xE2E), (0x10D0, 0x10F0), (0x4E00, 0x9FA5), (0x3041, 0x3096), (0x1100, 0x1112)]
    seen, out = set(tokens), list(tokens)
    rng = random.Random(7)

    def add(t):
        if t not in seen and len(out) < n:
            seen.add(t)
            out.append(t)
    for lo, hi in scripts:
        for c in range(lo, hi + 1):
            add(chr(c))
            add("##" + chr(c))
    while len(out) < n:
        lo, hi = scripts[rng.randrange(len(scripts) - 3)]  # multi-letter words: alphabetic scripts
        w = "".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(2, 4)))
        add(w if rng.random() < 0.5 else "##" + w)
    return out


def write_hf_folder(a, d, tokens, bert):
    os.makedirs(d, exist_ok=True)
    if a.arch == "distilbert":
        config = {"architectures": ["DistilBertForMaskedLM"], "model_type": "distilbert", "activation": "gelu",
                  "dim": a.hidden, "n_layers": a.layers, "n_heads": a.heads, "hidden_dim": a.intermediate,
                  "max_position_embeddings": a.max_position, "vocab_size": a.vocab, "pad_token_id": 0,
                  "sinusoidal_pos_embds": False, "tie_word_embeddings": a.tie, "dropout": 0.1,
                  "attention_dropout": 0.1, "initializer_range": 0.02}
    else:
        config = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_act": "gelu",
                  "hidden_size": a.hidden, "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
                  "intermediate_size": a.intermediate, "max_position_embeddings": a.max_position,
                  "type_vocab_size": 2, "vocab_size": a.vocab, "pad_token_id": 0,
                  "layer_norm_eps": 1e-12, "tie_word_embeddings": a.tie,
                  "position_embedding_type": "absolute", "attention_probs_dropout_prob": 0.1,
                  "hidden_dropout_prob": 0.1, "initializer_range": 0.02}
    if a.config_json:
        config = real_config(a, config)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_tokenizer(a, d, tokens, bert)
    st = os.path.join(d, "model.safetensors")
    write_safetensors(st, tensor_list(a), a)
    with open(st, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if not a.quiet:
        print("%s: %s %d bytes sha256 %s" % (st, a.dtype, os.path.getsize(st), digest))


SHAPE_KEYS = {"bert": ["hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                        "max_position_embeddings", "vocab_size"],
              "distilbert": ["dim", "n_layers", "n_heads", "hidden_dim", "max_position_embeddings", "vocab_size"]}


def real_config(a, generated):
    """The model's own config.json; its shapes must be those the weights are drawn with."""
    with open(a.config_json, encoding="utf-8") as f:
        real = json.load(f)
    bad = [k for k in SHAPE_KEYS[a.arch] if real.get(k) != generated[k]]
    if real.get("tie_word_embeddings", True) != a.tie:
        bad.append("tie_word_embeddings")
    if bad:
        sys.exit("make_random_model: %s disagrees with the options on %s" % (a.config_json, ", ".join(bad)))
    return real


def tokenizer_config(tj):
    """tokenizer_config.json stating the settings of tokenizer.json's BertNormalizer (HF's fast
    tokenizer follows tokenizer.json; the engine reads tokenizer_config.json)."""
    with open(tj, encoding="utf-8") as f:
        norm = json.load(f)["normalizer"]
    if norm.get("type") != "BertNormalizer":
        sys.exit("make_random_model: %s: normalizer %s, not BertNormalizer" % (tj, norm.get("type")))
    return {"tokenizer_class": "BertTokenizer", "do_lower_case": norm["lowercase"],
            "strip_accents": norm["strip_accents"], "tokenize_chinese_chars": norm["handle_chinese_chars"],
            "model_max_length": 512, "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
            "cls_token": "[CLS]", "mask_token": "[MASK]"}


def write_tokenizer(a, d, tokens, bert):
    if a.tokenizer_json:
        shutil.copyfile(a.tokenizer_json, os.path.join(d, "tokenizer.json"))
        if a.tokenizer_config:
            shutil.copyfile(a.tokenizer_config, os.path.join(d, "tokenizer_config.json"))
        else:
            write_json(os.path.join(d, "tokenizer_config.json"), tokenizer_config(a.tokenizer_json))
        return
    with open(os.path.join(d, "vocab.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(t + "\n" for t in tokens))
    shutil.copyfile(os.path.join(bert, "tokenizer_config.json"), os.path.join(d, "tokenizer_config.json"))


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)


def pooling_config(a):
    return {"pooling_strategy": a.pooling or "max", "activation_function": a.activation,
            "embedding_dimension": a.vocab}


def write_pooling(a, path):
    if a.pooling_json:
        shutil.copyfile(a.pooling_json, path)
    else:
        write_json(path, pooling_config(a))


def write_st_config(d):
    write_json(os.path.join(d, "config_sentence_transformers.json"),
               {"model_type": "SparseEncoder", "prompts": {"query": "", "document": ""},
                "default_prompt_name": None, "similarity_fn_name": "dot"})


def write_st_modules(a, d):
    """sentence-transformers SparseEncoder layout: the MLM transformer at the root, then SpladePooling."""
    write_st_config(d)
    os.makedirs(os.path.join(d, "1_SpladePooling"), exist_ok=True)
    write_pooling(a, os.path.join(d, "1_SpladePooling", "config.json"))
    write_json(os.path.join(d, "sentence_bert_config.json"), {"max_seq_length": 512, "do_lower_case": False})
    write_json(os.path.join(d, "modules.json"), [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.sparse_encoder.models.MLMTransformer"},
        {"idx": 1, "name": "1", "path": "1_SpladePooling",
         "type": "sentence_transformers.sparse_encoder.models.SpladePooling"}])


def idf_weights(a, tokens):
    rng = random.Random(a.seed + 1)
    return [round(rng.uniform(0.5, 8.0), 4) if i >= 999 or rng.random() < 0.2 else 0.0
            for i in range(len(tokens))]


def write_idf(a, path, tokens):
    if a.idf_file:
        shutil.copyfile(a.idf_file, path)
        return
    w = idf_weights(a, tokens)
    write_json(path, {t: w[i] for i, t in enumerate(tokens) if w[i] > 0})


def static_weights(a, tokens):
    """The query table: random, or the real idf.json mapped to ids as SparseStaticEmbedding.from_json
    does (in the file's order; a token the vocabulary lacks lands on [UNK])."""
    if not a.idf_file:
        return idf_weights(a, tokens)
    with open(a.idf_file, encoding="utf-8") as f:
        idf = json.load(f)
    ids = {t: i for i, t in enumerate(tokens)}
    w = [0.0] * len(tokens)
    for t, v in idf.items():
        w[ids.get(t, ids["[UNK]"])] = v
    return w


def write_router(a, tokens, bert):
    write_st_config(a.out)
    mod = "sentence_transformers.sparse_encoder.modules."
    types = {"query_0_SparseStaticEmbedding": mod + "sparse_static_embedding.SparseStaticEmbedding",
             "document_0_MLMTransformer": mod + "mlm_transformer.MLMTransformer",
             "document_1_SpladePooling": mod + "splade_pooling.SpladePooling"}
    write_json(os.path.join(a.out, "router_config.json"), {
        "types": types, "structure": {"query": ["query_0_SparseStaticEmbedding"],
                                      "document": ["document_0_MLMTransformer", "document_1_SpladePooling"]},
        "parameters": {"default_route": "document", "allow_empty_key": True, "route_mappings": {}}})
    write_json(os.path.join(a.out, "modules.json"), [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.router.Router"}])
    pool = os.path.join(a.out, "document_1_SpladePooling")
    os.makedirs(pool, exist_ok=True)
    write_pooling(a, os.path.join(pool, "config.json"))
    write_json(os.path.join(a.out, "document_0_MLMTransformer", "sentence_bert_config.json"),
               {"transformer_task": "fill-mask", "max_seq_length": 512})
    q = os.path.join(a.out, "query_0_SparseStaticEmbedding")
    os.makedirs(q, exist_ok=True)
    write_json(os.path.join(q, "config.json"), {"frozen": True})
    write_tokenizer(a, q, tokens, bert)
    w = array.array("f", static_weights(a, tokens))
    h = json.dumps({"weight": {"dtype": "F32", "shape": [len(w)], "data_offsets": [0, 4 * len(w)]}},
                   separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(q, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + encode(w, "F32"))


if __name__ == "__main__":
    main()
