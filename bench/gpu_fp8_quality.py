#!/usr/bin/env python3
"""Would FP8 (e4m3) GEMMs keep SPLADE's quality? (issue #13 item 5: "an FP8 path for the encoder's
GEMMs and the LM head with its quality measured as in 3; keep it only where it is faster at equal
quality"). Quality first, before any kernel: every nn.Linear of a BertForMaskedLM (the layers' Q, K,
V, attention-out, FFN-in, FFN-out, the MLM transform, optionally the LM head) has its input and
weight rounded to e4m3 with the scales an FP8 GEMM would use, then multiplied in fp32 (fp32
accumulation: the best case for Hopper's FP8 tensor cores). Compared with the same model in fp32:

  - top-50 agreement on every SciFact document (bench/cpu_quality.py's measure: the share of the
    fp32 vector's 50 largest terms found in the other's 50 largest), mean and 1st percentile;
  - nDCG@10 on SciFact's test queries (exhaustive dot products over all documents; the same code
    for every variant).

Variants: bf16 autocast (our GPU default, for scale); fp8 rows: per-token activation scales and
per-output-channel weight scales (the most accurate FP8 scaling); fp8 tensor: one scale per tensor
for each operand (what a plain cuBLASLt FP8 GEMM takes); "+head": the LM head in FP8 too.

  python3 bench/gpu_fp8_quality.py MODEL_DIR SCIFACT_DIR [--max-length 256] [--out FILE.json]

Runs on the GPU machine (torch, transformers); CPU works too, slowly. Prints one table."""
import argparse
import json
import math
import os
import time

import torch
from transformers import AutoTokenizer, BertForMaskedLM

E4M3_MAX = 448.0


def qdq(x, per_row):
    """x rounded to e4m3 after scaling its rows (or the whole tensor) to the format's range."""
    amax = x.abs().amax(-1, keepdim=True) if per_row else x.abs().amax()
    s = amax.clamp(min=1e-30) / E4M3_MAX
    return (x / s).to(torch.float8_e4m3fn).to(x.dtype) * s


def fp8_linear(lin, per_row):
    w8 = qdq(lin.weight.data.float(), per_row)

    def forward(x):
        y = qdq(x.float(), per_row) @ w8.t()
        return y + lin.bias if lin.bias is not None else y

    return forward


def set_variant(m, variant, originals):
    for lin, fwd in originals.items():
        lin.forward = fwd
    if not variant.startswith("fp8"):
        return
    per_row, head = "rows" in variant, variant.endswith("+head")
    lins = [mod for mod in m.bert.encoder.modules() if isinstance(mod, torch.nn.Linear)]
    lins.append(m.cls.predictions.transform.dense)
    if head:
        lins.append(m.cls.predictions.decoder)
    for lin in lins:
        lin.forward = fp8_linear(lin, per_row)


@torch.no_grad()
def encode(m, tok, texts, max_length, variant, dev, batch=64):
    """SPLADE max pooling: max over tokens of log1p(relu(logits)), dense [n, V] on the device."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = torch.zeros(len(texts), m.config.vocab_size, device=dev)
    for b in range(0, len(order), batch):
        idx = order[b:b + batch]
        enc = tok([texts[i] for i in idx], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        enc = {k: v.to(dev) for k, v in enc.items()}
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=variant == "bf16"):
            logits = m(**enc).logits.float()
        act = torch.log1p(torch.relu(logits)) * enc["attention_mask"].unsqueeze(-1)
        out[torch.tensor(idx, device=dev)] = act.max(dim=1).values
    return out


def agreement(ref, oth, k=50):
    top_r = ref.topk(k, dim=1)
    top_o = oth.topk(k, dim=1).indices
    shares = []
    for i in range(ref.shape[0]):
        keep = top_r.values[i] > 0  # texts with fewer than k terms: their nonzero terms only
        r = set(top_r.indices[i][keep].tolist())
        if r:
            shares.append(len(r & set(top_o[i].tolist())) / len(r))
    shares.sort()
    return sum(shares) / len(shares), shares[len(shares) // 100]


def ndcg10(q, d, qids, dids, qrels):
    scores = q @ d.t()
    top = scores.topk(10, dim=1).indices.tolist()
    total = 0.0
    for i, qid in enumerate(qids):
        rel = qrels[qid]
        dcg = sum(rel.get(dids[j], 0) / math.log2(r + 2) for r, j in enumerate(top[i]))
        ideal = sorted(rel.values(), reverse=True)[:10]
        idcg = sum(g / math.log2(r + 2) for r, g in enumerate(ideal))
        total += dcg / idcg if idcg > 0 else 0.0
    return total / len(qids)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("scifact")
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--variants", nargs="+", default=["bf16", "fp8-rows", "fp8-rows+head", "fp8-tensor"])
    ap.add_argument("--out")
    ap.add_argument("--limit", type=int, help="first N documents only (a smoke test; nDCG then means little)")
    a = ap.parse_args()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    tok = AutoTokenizer.from_pretrained(a.model)
    m = BertForMaskedLM.from_pretrained(a.model, dtype=torch.float32).to(dev).eval()
    originals = {mod: mod.forward for mod in m.modules() if isinstance(mod, torch.nn.Linear)}
    docs = [json.loads(l) for l in open(os.path.join(a.scifact, "corpus.jsonl"))][:a.limit]
    dids = [d["_id"] for d in docs]
    dtexts = [(d.get("title") or "") + " " + d["text"] for d in docs]
    qrels = {}
    for line in list(open(os.path.join(a.scifact, "qrels", "test.tsv")))[1:]:
        qid, did, g = line.split()
        qrels.setdefault(qid, {})[did] = int(g)
    queries = {q["_id"]: q["text"] for q in map(json.loads, open(os.path.join(a.scifact, "queries.jsonl")))}
    qids = [q for q in queries if q in qrels]
    qtexts = [queries[q] for q in qids]
    rows = []
    set_variant(m, "fp32", originals)
    t0 = time.time()
    ref_d = encode(m, tok, dtexts, a.max_length, "fp32", dev)
    ref_q = encode(m, tok, qtexts, a.max_length, "fp32", dev)
    base = ndcg10(ref_q, ref_d, qids, dids, qrels)
    rows.append({"variant": "fp32", "ndcg10": base, "agree50_mean": 1.0, "agree50_p1": 1.0,
                 "terms_per_doc": float((ref_d > 0).sum(1).float().mean()), "s": time.time() - t0})
    for v in a.variants:
        set_variant(m, v, originals)
        t0 = time.time()
        d, q = encode(m, tok, dtexts, a.max_length, v, dev), encode(m, tok, qtexts, a.max_length, v, dev)
        mean, p1 = agreement(ref_d, d)
        rows.append({"variant": v, "ndcg10": ndcg10(q, d, qids, dids, qrels), "agree50_mean": mean, "agree50_p1": p1,
                     "terms_per_doc": float((d > 0).sum(1).float().mean()), "s": time.time() - t0})
    print("model %s, %d documents, %d queries, max length %d, %s" % (a.model, len(docs), len(qids), a.max_length,
                                                                    torch.cuda.get_device_name() if dev == "cuda" else "cpu"))
    print("| variant | nDCG@10 | vs fp32 | top-50 agreement mean | 1st percentile | terms / doc |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| %s | %.4f | %+.4f | %.4f | %.3f | %.1f |" % (r["variant"], r["ndcg10"], r["ndcg10"] - base,
                                                           r["agree50_mean"], r["agree50_p1"], r["terms_per_doc"]))
    if a.out:
        json.dump({"model": a.model, "rows": rows}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
