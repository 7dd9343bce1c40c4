#!/usr/bin/env python3
"""Reference SciFact pipeline for splade-tiny: PyTorch + transformers vectors, exact float64 dot
products, nDCG@10 on the test qrels. Runs on the GPU machine (torch lives there):

    python3 tools/reference_scifact.py --model DIR --data DIR --out DIR

DIR for --data holds corpus.jsonl, queries.jsonl, qrels/test.tsv (BEIR layout). Texts are
title + " " + text (text alone when the title is empty), truncated to --max-length 256 tokens,
lowercased by the model's BertTokenizerFast; SPLADE weights are max over tokens of
log1p(relu(logits)) (masked). Writes to --out:
  reference.trec   top-100 per test query (exact float64 scores; score ties by docno descending)
  reference.json   nDCG@10 / MRR@10 / R@100 of the float run (trec_eval definitions), the same
                   for the 8-bit quantized scheme of docs/FORMAT.md applied to these vectors
                   (integer scores, ties to the lower corpus position) and vector statistics.

With --doc-vectors/--query-vectors (JSONL of `splade-index encode`), no torch is needed: the same
float-vs-quantized comparison runs on those vectors (the quantization effect of our own index)."""
import argparse
import json
import math
import os
import time

import numpy as np


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def read_qrels(path):
    qrels = {}
    with open(path) as f:
        for i, line in enumerate(f):
            parts = line.split()
            if i == 0 and not parts[2].lstrip("-").isdigit():
                continue
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return qrels


def encode(model, tok, texts, max_length, batch, device):
    import torch
    out = torch.zeros(len(texts), model.config.vocab_size, dtype=torch.float32, device=device)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    torch.set_grad_enabled(False)
    for s in range(0, len(texts), batch):
        idx = order[s:s + batch]
        enc = tok([texts[i] for i in idx], max_length=max_length, truncation=True, padding=True,
                  return_tensors="pt").to(device)
        logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                       token_type_ids=enc.get("token_type_ids")).logits
        w = torch.log1p(torch.relu(logits)) * enc["attention_mask"].unsqueeze(-1)
        out[torch.tensor(idx, device=device)] = w.max(dim=1).values
    return out


def load_model(path):
    """BertForMaskedLM with splade-tiny's weights, loaded by hand so that nothing is silently left at
    its initial value: the checkpoint names LayerNorm parameters gamma/beta (TF style), renamed
    here, and any missing tensor other than the tied decoder is an error."""
    from safetensors.torch import load_file
    from transformers import BertConfig, BertForMaskedLM
    model = BertForMaskedLM(BertConfig.from_pretrained(path))
    sd = {k.replace(".gamma", ".weight").replace(".beta", ".bias"): v
          for k, v in load_file(os.path.join(path, "model.safetensors")).items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if not k.startswith("cls.predictions.decoder")]
    if missing or unexpected:
        raise SystemExit(f"weights do not match: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    return model


def trec_rank(scores, doc_ids, depth):
    """Indices of the top `depth` docs in trec_eval's order (score desc, docno desc)."""
    cand = np.argsort(-scores, kind="stable")[: depth * 4 + 50]
    return sorted(cand, key=lambda i: (-scores[i], [-ord(c) for c in doc_ids[i]] + [1]))[:depth]


def metrics(ranked, rel):
    nrel = sum(1 for r in rel.values() if r >= 1)
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if rel.get(d, 0) > 0)
    ideal = sorted((r for r in rel.values() if r > 0), reverse=True)[:10]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    rr = next((1.0 / (i + 1) for i, d in enumerate(ranked[:10]) if rel.get(d, 0) >= 1), 0.0)
    r100 = sum(1 for d in ranked[:100] if rel.get(d, 0) >= 1) / nrel
    return dcg / idcg if idcg else 0.0, rr, r100


def quantize(w, mx):
    q = np.floor(w.astype(np.float64) * 255.0 / mx + 0.5)
    q = np.clip(q, 1, 255)
    return np.where(w > 0, q, 0)


def read_vectors(path, vocab):
    ids, rows = [], []
    for rec in read_jsonl(path):
        ids.append(str(rec["id"]))
        rows.append({vocab.setdefault(t, len(vocab)): w for t, w in rec["vector"].items()})
    return ids, rows


def dense(rows, n_cols):
    m = np.zeros((len(rows), n_cols), dtype=np.float32)
    for i, r in enumerate(rows):
        for t, w in r.items():
            m[i, t] = w
    return m


def torch_vectors(a, texts, qtexts):
    import torch
    from transformers import AutoTokenizer
    device = "cuda" if torch.cuda.is_available() else "cpu"
    # transformers 5 ignores BertTokenizerFast(vocab_file=...) (every token became [UNK]: nDCG 0.002
    # in the first two runs); AutoTokenizer reads vocab.txt + tokenizer_config.json properly.
    tok = AutoTokenizer.from_pretrained(a.model)
    probe = tok("insulin resistance in muscle")["input_ids"]
    if tok.unk_token_id in probe or len(probe) < 5:
        raise SystemExit(f"tokenizer broken: {probe}")
    model = load_model(a.model).to(device).eval()
    D = encode(model, tok, texts, a.max_length, a.batch, device)
    Q = encode(model, tok, qtexts, a.max_length, a.batch, device)
    S = (Q.double() @ D.double().T).cpu().numpy()
    return D.cpu().numpy(), Q.cpu().numpy(), S, {"device": device, "torch": torch.__version__}


def file_vectors(a, doc_ids, qids):
    vocab = {}
    dids, drows = read_vectors(a.doc_vectors, vocab)
    vq, qrows = read_vectors(a.query_vectors, vocab)
    if dids != doc_ids:
        raise SystemExit("doc vectors are not in corpus order")
    qpos = {q: i for i, q in enumerate(vq)}
    D = dense(drows, len(vocab))
    Q = dense([qrows[qpos[q]] for q in qids], len(vocab))
    return D, Q, Q.astype(np.float64) @ D.astype(np.float64).T, {"vectors": a.doc_vectors}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--doc-vectors")
    ap.add_argument("--query-vectors")
    a = ap.parse_args()
    t0 = time.time()
    corpus = read_jsonl(os.path.join(a.data, "corpus.jsonl"))
    queries = {q["_id"]: q["text"] for q in read_jsonl(os.path.join(a.data, "queries.jsonl"))}
    qrels = read_qrels(os.path.join(a.data, "qrels", "test.tsv"))
    doc_ids = [d["_id"] for d in corpus]
    texts = [(d.get("title") or "") + " " + d["text"] if d.get("title") else d["text"] for d in corpus]
    qids = sorted(q for q in qrels if any(r >= 1 for r in qrels[q].values()))
    if a.doc_vectors:
        Dn, Qn, S, info = file_vectors(a, doc_ids, qids)
    else:
        Dn, Qn, S, info = torch_vectors(a, texts, [queries[q] for q in qids])
    gmax = float(Dn.max())
    Dq = quantize(Dn, gmax)
    Sq = np.stack([quantize(Qn[i], float(Qn[i].max())) for i in range(len(qids))]) @ Dq.T
    os.makedirs(a.out, exist_ok=True)
    float_m, quant_m = [], []
    with open(os.path.join(a.out, "reference.trec"), "w") as f:
        for qi, q in enumerate(qids):
            ranked = trec_rank(S[qi], doc_ids, 100)
            for r, i in enumerate(ranked):
                f.write(f"{q} Q0 {doc_ids[i]} {r + 1} {S[qi][i]:.9g} reference\n")
            float_m.append(metrics([doc_ids[i] for i in ranked], qrels[q]))
            qorder = np.lexsort((np.arange(len(doc_ids)), -Sq[qi]))[:100]  # ties: lower position
            quant_m.append(metrics([doc_ids[i] for i in qorder if Sq[qi][i] > 0], qrels[q]))
    mean = lambda m, k: float(np.mean([x[k] for x in m]))
    res = dict(info, **{
        "queries": len(qids), "docs": len(doc_ids), "max_length": a.max_length,
        "float": {"ndcg@10": mean(float_m, 0), "mrr@10": mean(float_m, 1), "recall@100": mean(float_m, 2)},
        "quantized_u8": {"ndcg@10": mean(quant_m, 0), "mrr@10": mean(quant_m, 1), "recall@100": mean(quant_m, 2)},
        "doc_nnz_mean": float((Dn > 0).sum(1).mean()), "query_nnz_mean": float((Qn > 0).sum(1).mean()),
        "doc_weight_max": gmax, "seconds": time.time() - t0,
    })
    json.dump(res, open(os.path.join(a.out, "reference.json"), "w"), indent=1)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
