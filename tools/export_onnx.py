#!/usr/bin/env python3
"""Writes an ONNX graph of a BertForMaskedLM SPLADE model from its safetensors weights, so that
ONNX Runtime (the CPU peer in bench/cpu_peer.py) computes exactly what splade-index computes:

    out[b, v] = max over positions s with attention_mask[b, s] = 1 of log(1 + relu(logits[b, s, v]))

Inputs input_ids and attention_mask, int64 [batch, seq]; output "splade" float32 [batch, vocab].
Built with the `onnx` package's graph helpers (opset 17: LayerNormalization is one op), not torch
export: torch is not installable everywhere we benchmark, and the graph then depends on nothing
but the weights. The layers follow transformers' BertForMaskedLM in eval mode (post-LayerNorm,
exact erf GELU, additive mask, token type 0); the weights are the same safetensors bytes both
engines load, written as fp32 initializers (Linear weights transposed to [in, out] for MatMul).

  python3 tools/export_onnx.py cache/splade-tiny            # -> cache/splade-tiny/model.onnx
  python3 tools/export_onnx.py cache/rand-bert-base -o tmp/base.onnx
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file


class Graph:
    """Accumulates nodes and initializers; names are generated, so callers pass values around."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, hint):
        self.n += 1
        return "%s_%d" % (hint, self.n)

    def const(self, array, hint="c"):
        nm = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), nm))
        return nm

    def op(self, kind, inputs, hint=None, **attrs):
        out = self.name(hint or kind.lower())
        self.nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out


def pick(w, *names):
    """The first of names present (older checkpoints say gamma/beta for LayerNorm)."""
    for n in names:
        if n in w:
            return w[n].astype(np.float32)
    raise KeyError("none of %s in model.safetensors" % (names,))


def layer_norm(g, x, w, prefix, eps):
    gamma = pick(w, prefix + ".weight", prefix + ".gamma")
    beta = pick(w, prefix + ".bias", prefix + ".beta")
    return g.op("LayerNormalization", [x, g.const(gamma), g.const(beta)], axis=-1, epsilon=eps)


def linear(g, x, w, prefix):
    wt = pick(w, prefix + ".weight").T  # nn.Linear [out, in] -> MatMul's [in, out]
    return g.op("Add", [g.op("MatMul", [x, g.const(wt)]), g.const(pick(w, prefix + ".bias"))])


def gelu(g, x):
    """Exact GELU, 0.5 x (1 + erf(x / sqrt 2)) (ORT fuses this pattern into one Gelu op)."""
    e = g.op("Erf", [g.op("Div", [x, g.const(np.float32(np.sqrt(2.0)))])])
    return g.op("Mul", [g.op("Mul", [x, g.op("Add", [e, g.const(np.float32(1.0))])]), g.const(np.float32(0.5))])


def attention(g, x, w, p, c, mask_add):
    nh = c["num_attention_heads"]
    dh = c["hidden_size"] // nh
    heads = g.const(np.array([0, 0, nh, dh], dtype=np.int64))
    q, k, v = (g.op("Reshape", [linear(g, x, w, p + ".attention.self." + n), heads]) for n in ("query", "key", "value"))
    q = g.op("Transpose", [q], perm=[0, 2, 1, 3])  # [B, nh, S, dh]
    k = g.op("Transpose", [k], perm=[0, 2, 3, 1])  # [B, nh, dh, S]
    v = g.op("Transpose", [v], perm=[0, 2, 1, 3])
    s = g.op("Mul", [g.op("MatMul", [q, k]), g.const(np.float32(1.0 / np.sqrt(dh)))])
    probs = g.op("Softmax", [g.op("Add", [s, mask_add])], axis=-1)
    ctx = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    return g.op("Reshape", [ctx, g.const(np.array([0, 0, c["hidden_size"]], dtype=np.int64))])


def layer(g, x, w, l, c, mask_add):
    p = "bert.encoder.layer.%d" % l
    eps = c.get("layer_norm_eps", 1e-12)
    ctx = attention(g, x, w, p, c, mask_add)
    h = layer_norm(g, g.op("Add", [linear(g, ctx, w, p + ".attention.output.dense"), x]),
                   w, p + ".attention.output.LayerNorm", eps)
    f = gelu(g, linear(g, h, w, p + ".intermediate.dense"))
    return layer_norm(g, g.op("Add", [linear(g, f, w, p + ".output.dense"), h]), w, p + ".output.LayerNorm", eps)


def build(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    if c.get("hidden_act", "gelu") != "gelu" or c.get("position_embedding_type", "absolute") != "absolute":
        sys.exit("export_onnx: only BERT with exact GELU and absolute positions")
    w = load_file(os.path.join(model_dir, "model.safetensors"))
    eps = c.get("layer_norm_eps", 1e-12)
    g = Graph()
    # Embeddings: word + position (0..S-1) + token type 0, then LayerNorm.
    word = pick(w, "bert.embeddings.word_embeddings.weight")
    # Positions 0..S-1 as CumSum(ones) - 1, [B, S]: ORT rewrites Gather(table, Range(...)) into a
    # Slice that rejects the scalar bounds Range needs.
    ones = g.op("Add", [g.op("Mul", ["input_ids", g.const(np.int64(0))]), g.const(np.int64(1))])
    pos_ids = g.op("Sub", [g.op("CumSum", [ones, g.const(np.array(1, dtype=np.int64))]), g.const(np.int64(1))])
    x = g.op("Add", [g.op("Gather", [g.const(word, "word_emb"), "input_ids"]),
                     g.op("Gather", [g.const(pick(w, "bert.embeddings.position_embeddings.weight")), pos_ids])])
    x = g.op("Add", [x, g.const(pick(w, "bert.embeddings.token_type_embeddings.weight")[0])])
    x = layer_norm(g, x, w, "bert.embeddings.LayerNorm", eps)
    maskf = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    # Additive mask [B, 1, 1, S]: 0 where attended, -1e9 on padding (exp underflows to 0 exactly).
    mask_add = g.op("Mul", [g.op("Sub", [g.const(np.float32(1.0)), maskf]), g.const(np.float32(-1e9))])
    mask_add = g.op("Unsqueeze", [mask_add, g.const(np.array([1, 2], dtype=np.int64))])
    for l in range(c["num_hidden_layers"]):
        x = layer(g, x, w, l, c, mask_add)
    # MLM transform and decoder (tied to the word embeddings when the checkpoint has no decoder).
    h = layer_norm(g, gelu(g, linear(g, x, w, "cls.predictions.transform.dense")), w,
                   "cls.predictions.transform.LayerNorm", eps)
    dec = w.get("cls.predictions.decoder.weight", word).astype(np.float32)
    bias = pick(w, "cls.predictions.bias", "cls.predictions.decoder.bias")
    logits = g.op("Add", [g.op("MatMul", [h, g.const(dec.T, "decoder")]), g.const(bias)])
    act = g.op("Log", [g.op("Add", [g.op("Relu", [logits]), g.const(np.float32(1.0))])])
    act = g.op("Mul", [act, g.op("Unsqueeze", [maskf, g.const(np.array([2], dtype=np.int64))])])  # >= 0: 0 is neutral
    g.nodes.append(helper.make_node("ReduceMax", [act], ["splade"], axes=[1], keepdims=0))
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])
    am = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])
    out = helper.make_tensor_value_info("splade", TensorProto.FLOAT, ["batch", c["vocab_size"]])
    graph = helper.make_graph(g.nodes, "splade", [ids, am], [out], g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="splade-index export_onnx")
    m.ir_version = 8
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("-o", "--out", help="default MODEL_DIR/model.onnx")
    a = ap.parse_args()
    m = build(a.model_dir)
    onnx.checker.check_model(m)
    out = a.out or os.path.join(a.model_dir, "model.onnx")
    onnx.save(m, out)
    print("%s: %d nodes, %d bytes" % (out, len(m.graph.node), os.path.getsize(out)))


if __name__ == "__main__":
    main()
