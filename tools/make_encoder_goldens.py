#!/usr/bin/env python3
"""Encoder goldens from the independent reference: transformers BertForMaskedLM in fp32
(eval mode, CPU by default so no TF32 creeps in), SPLADE = max over attended positions of
log1p(relu(logits)), inputs tokenized by HF `tokenizers` (BertWordPiece) from the model's own
vocab.txt with truncation at --max-length.

Two steps:
  prepare (no torch): pick texts from BEIR SciFact (+ edge cases) into a JSONL of {"id","text"}
      python3 tools/make_encoder_goldens.py prepare --scifact ../shared/data/scifact \
          --docs 150 --queries 100 --out texts.jsonl
  encode (torch + transformers; run on the GPU machine, which has them):
      python3 tools/make_encoder_goldens.py encode --model DIR --texts texts.jsonl --out golden.jsonl

Output: first line {"meta": {...}} (model sha256, versions, max_length, threshold); then one line
per text {"id", "text", "ids", "truncated", "vec": [[term_id, weight], ...]} keeping |w| >= 1e-5,
weights rounded to 7 decimals. tests/test_encoder_cpu.c reads these files.
"""
import argparse
import hashlib
import json
import os
import sys

EDGE_TEXTS = [
    "",
    "   ",
    "What is the role of p53 in apoptosis?",
    "Café naïve RÉSUMÉ — Ünïcödé façade, Ελληνικά, 中文字符, emoji 🙂 and tabs\tnewlines\n.",
    "a " * 400,  # far past max_length: truncated
    "COVID-19 mRNA-1273 vaccine efficacy was 94.1% (95% CI, 89.3–96.8).",
]


def prepare(a):
    def read(path, n, prefix):
        out = []
        with open(path, encoding="utf-8") as f:
            for line in f:
                if len(out) >= n:
                    break
                r = json.loads(line)
                title, text = r.get("title") or "", r.get("text") or ""
                out.append({"id": prefix + str(r["_id"]), "text": (title + " " + text) if title else text})
        return out
    texts = read(os.path.join(a.scifact, "corpus.jsonl"), a.docs, "d")
    texts += read(os.path.join(a.scifact, "queries.jsonl"), a.queries, "q")
    texts += [{"id": "edge%d" % i, "text": t} for i, t in enumerate(EDGE_TEXTS)]
    with open(a.out, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
    print("%s: %d texts" % (a.out, len(texts)))


def tokenizer_for(model_dir, max_length):
    from tokenizers import BertWordPieceTokenizer
    lower = True
    tc = os.path.join(model_dir, "tokenizer_config.json")
    if os.path.exists(tc):
        with open(tc) as f:
            lower = json.load(f).get("do_lower_case", True)
    tok = BertWordPieceTokenizer(os.path.join(model_dir, "vocab.txt"), lowercase=lower)
    full = BertWordPieceTokenizer(os.path.join(model_dir, "vocab.txt"), lowercase=lower)
    tok.enable_truncation(max_length)
    return tok, full


def encode(a):
    import torch
    import transformers
    from transformers import BertForMaskedLM
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    kw = dict(attn_implementation="eager", output_loading_info=True)
    try:  # transformers >= 4.56 names it `dtype`, older ones `torch_dtype`
        model, info = BertForMaskedLM.from_pretrained(a.model, dtype=torch.float32, **kw)
    except TypeError:
        model, info = BertForMaskedLM.from_pretrained(a.model, torch_dtype=torch.float32, **kw)
    model = model.float()
    missing = [k for k in info.get("missing_keys", []) if "position_ids" not in k]
    if missing:
        sys.exit("reference model did not load every weight: %s" % missing)
    model = model.to(a.device).eval()
    tok, full = tokenizer_for(a.model, a.max_length)
    with open(a.texts, encoding="utf-8") as f:
        texts = [json.loads(l) for l in f if l.strip()]
    with open(os.path.join(a.model, "model.safetensors"), "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    meta = {"model": os.path.basename(os.path.normpath(a.model)), "safetensors_sha256": sha,
            "torch": torch.__version__, "transformers": transformers.__version__, "device": a.device,
            "max_length": a.max_length, "threshold": a.threshold, "dtype": "float32",
            "reference": "BertForMaskedLM eager; max over attended positions of log1p(relu(logits))"}
    rows = []
    for i in range(0, len(texts), a.batch):
        rows += encode_batch(model, tok, full, texts[i:i + a.batch], a)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(json.dumps({"meta": meta}) + "\n")
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")
    nnz = [len(r["vec"]) for r in rows]
    print("%s: %d texts, nnz min/mean/max %d/%.1f/%d" % (a.out, len(rows), min(nnz), sum(nnz) / len(nnz), max(nnz)))


def encode_batch(model, tok, full, batch, a):
    import torch
    encs = [tok.encode(t["text"]) for t in batch]
    L = max(len(e.ids) for e in encs)
    ids = torch.zeros(len(batch), L, dtype=torch.long)
    mask = torch.zeros(len(batch), L, dtype=torch.long)
    for j, e in enumerate(encs):
        ids[j, :len(e.ids)] = torch.tensor(e.ids)
        mask[j, :len(e.ids)] = 1
    with torch.no_grad():
        logits = model(input_ids=ids.to(a.device), attention_mask=mask.to(a.device),
                       token_type_ids=torch.zeros_like(ids).to(a.device)).logits.float()
        act = torch.log1p(torch.relu(logits)) * mask.to(a.device).unsqueeze(-1)
        w = act.max(dim=1).values.cpu()
    out = []
    for j, t in enumerate(batch):
        nz = torch.nonzero(w[j].abs() >= a.threshold).flatten().tolist()
        out.append({"id": t["id"], "text": t["text"], "ids": encs[j].ids,
                    "truncated": len(full.encode(t["text"]).ids) > len(encs[j].ids),
                    "vec": [[v, round(float(w[j, v]), 7)] for v in nz]})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--scifact", required=True)
    p.add_argument("--docs", type=int, default=150)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--out", required=True)
    e = sub.add_parser("encode")
    e.add_argument("--model", required=True)
    e.add_argument("--texts", required=True)
    e.add_argument("--out", required=True)
    e.add_argument("--max-length", type=int, default=256)
    e.add_argument("--threshold", type=float, default=1e-5)
    e.add_argument("--batch", type=int, default=16)
    e.add_argument("--device", default="cpu")
    a = ap.parse_args()
    prepare(a) if a.cmd == "prepare" else encode(a)


if __name__ == "__main__":
    main()
