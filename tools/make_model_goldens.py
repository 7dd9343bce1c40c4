#!/usr/bin/env python3
"""Goldens for the other architectures, layouts and modes (issue 15), from the independent
references: sentence-transformers SparseEncoder for sentence-transformers folders (SpladePooling's
own pooling and activation, Router query/document routes, SparseStaticEmbedding query tables),
transformers *ForMaskedLM + SPLADE max/log1p(relu) for plain Hugging Face folders, and HF
`tokenizers` (BertTokenizerFast from the folder's vocab.txt + tokenizer_config.json) for token ids.

The models are random weights of the real architectures and tensor names, written without torch by
tools/make_random_model.py (`make models`, see MODELS below), so their bytes and the sha256 the
goldens record do not depend on a torch version.

  python3 tools/make_model_goldens.py --scifact ../shared/data/scifact --out tests/data/models

Output per model: tests/data/models/<name>.jsonl in tests/test_encoder_cpu.c's format (meta line,
then {"id","text","ids","truncated","vec"}); "route" in meta says "document" or "query"; query
goldens of doc-only models hold the query-table vectors (no special tokens, as
SparseStaticEmbedding tokenizes).
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL_DATA = os.path.join(REPO, "tests", "data", "models", "real")

# name -> make_random_model.py arguments (cache/<name>)
MODELS = {
    "rand-distilbert": ["--arch", "distilbert", "--hidden", "96", "--heads", "3", "--layers", "2",
                        "--intermediate", "192", "--tie", "--pooling", "max", "--activation", "relu", "--vocab-bias", "-17"],
    "rand-distil-sum": ["--arch", "distilbert", "--hidden", "64", "--heads", "2", "--layers", "1",
                        "--intermediate", "128", "--pooling", "sum", "--activation", "log1p_relu",
                        "--vocab-bias", "-5"],
    "rand-docv3": ["--arch", "distilbert", "--hidden", "64", "--heads", "2", "--layers", "1",
                   "--intermediate", "128", "--tie", "--router", "--activation", "log1p_relu", "--vocab-bias", "-14"],
    "rand-docv2-idf": ["--arch", "distilbert", "--hidden", "64", "--heads", "2", "--layers", "1",
                       "--intermediate", "128", "--tie", "--idf", "--vocab-bias", "-14"],
    # the query-latency benchmark's model (bench/bench_query_table.c): DistilBERT-base shapes, not in `make models`
    "rand-distil-base-docv3": ["--arch", "distilbert", "--hidden", "768", "--heads", "12", "--layers", "6",
                               "--intermediate", "3072", "--tie", "--router", "--activation", "log1p_relu",
                               "--numpy", "--vocab-bias", "-30"],
    # the real tokenizer files (tools/make_real_goldens.py): committed vocabulary and idf.json excerpts
    "real-docv2-small": ["--arch", "distilbert", "--hidden", "64", "--heads", "2", "--layers", "1",
                         "--intermediate", "128", "--tie", "--idf", "--vocab-bias", "-16",
                         "--idf-file", os.path.join(REAL_DATA, "bert-uncased-idf-excerpt.json")],
    "real-multi-small": ["--hidden", "64", "--heads", "2", "--layers", "1", "--intermediate", "128", "--tie",
                         "--idf", "--vocab-bias", "-17",
                         "--vocab-txt", os.path.join(REAL_DATA, "mbert-uncased-vocab.txt.gz"),
                         "--idf-file", os.path.join(REAL_DATA, "mbert-uncased-idf-excerpt.json")],
    "rand-multi": ["--hidden", "64", "--heads", "2", "--layers", "1", "--intermediate", "128", "--tie",
                   "--vocab-size", "105879", "--vocab-bias", "-15"],
}

MULTILINGUAL = [
    "Добро пожаловать в библиотеку: поиск по документам на русском языке.",
    "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.",
    "مرحبا بكم في نظام البحث عن المعلومات باللغة العربية.",
    "यह एक हिंदी वाक्य है जिसमें खोज और सूचना पुनर्प्राप्ति की बात है।",
    "זהו משפט בעברית על אחזור מידע.",
    "นี่คือประโยคภาษาไทยเกี่ยวกับการค้นหา",
    "ეს არის ქართული წინადადება ძიების შესახებ.",
    "信息检索是计算机科学的一个分支，研究如何从大量文档中找到相关内容。",
    "情報検索はとても重要です。ひらがなとカタカナ、漢字。",
    "정보 검색은 중요한 연구 분야입니다.",
    "Übermäßige Größe: Straße, Fußgänger, naïve café, résumé, ÅNGSTRÖM.",
    "Mixed: Москва 北京 Αθήνα القاهرة मुंबई 東京 서울 — 12,345.67 €",
]
EDGE = ["", "   ", "What is the role of p53 in apoptosis?", "a " * 400]


def texts(scifact):
    out = []
    for name, n, pre in (("corpus.jsonl", 12, "d"), ("queries.jsonl", 8, "q")):
        with open(os.path.join(scifact, name), encoding="utf-8") as f:
            for line in f:
                if len([t for t in out if t["id"].startswith(pre)]) >= n:
                    break
                r = json.loads(line)
                t = ((r.get("title") or "") + " " + (r.get("text") or "")).strip()
                out.append({"id": pre + str(r["_id"]), "text": t})
    out += [{"id": "ml%d" % i, "text": t} for i, t in enumerate(MULTILINGUAL)]
    out += [{"id": "edge%d" % i, "text": t} for i, t in enumerate(EDGE)]
    return out


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def doc_dir(d):
    sub = os.path.join(d, "document_0_MLMTransformer")
    return sub if os.path.isdir(sub) else d


def vec_of(row, threshold):
    import torch
    row = row.to_dense() if row.is_sparse else row
    nz = torch.nonzero(row.abs() >= threshold).flatten().tolist()
    return [[v, round(float(row[v]), 7)] for v in nz]


def encode_st(d, items, route, a):
    """sentence-transformers' own forward: the reference for pooling/activation and routes."""
    import torch
    from sentence_transformers import SparseEncoder
    torch.manual_seed(0)
    model = SparseEncoder(d, device="cpu")
    model.max_seq_length = a.max_length
    fn = model.encode_query if route == "query" else model.encode_document
    return [vec_of(v, a.threshold) for v in fn([t["text"] for t in items], convert_to_tensor=True,
                                                 batch_size=8)]


def encode_hf(d, items, a):
    """Plain folder: *ForMaskedLM, SPLADE = max over attended positions of log1p(relu(logits))."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer
    model = AutoModelForMaskedLM.from_pretrained(d, attn_implementation="eager").float().eval()
    tok = AutoTokenizer.from_pretrained(d)
    out = []
    for t in items:
        enc = tok(t["text"], truncation=True, max_length=a.max_length, return_tensors="pt")
        enc.pop("token_type_ids", None)
        with torch.no_grad():
            logits = model(**enc).logits[0]
        out.append(vec_of(torch.log1p(torch.relu(logits)).max(dim=0).values, a.threshold))
    return out


def idf_query(d, items, max_length):
    """OpenSearch doc-only layout (idf.json): query = idf of each distinct token, no special tokens."""
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(d)
    with open(os.path.join(d, "idf.json"), encoding="utf-8") as f:
        idf = json.load(f)
    vocab = tok.get_vocab()
    table = {}
    for k, v in idf.items():  # as SparseStaticEmbedding.from_json: in file order, a token not in the
        table[vocab.get(k, tok.unk_token_id)] = v  # vocabulary lands on [UNK] (convert_tokens_to_ids)
    out = []
    for t in items:
        ids = tok(t["text"], add_special_tokens=False, truncation=True, max_length=max_length)["input_ids"]
        out.append([[i, round(float(table[i]), 7)] for i in sorted(set(ids)) if table.get(i, 0.0) != 0.0])
    return out


def write(path, meta, items, ids, vecs, full):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"meta": meta}) + "\n")
        for t, i, v, n in zip(items, ids, vecs, full):
            f.write(json.dumps({"id": t["id"], "text": t["text"], "ids": i, "truncated": n > len(i), "vec": v},
                               ensure_ascii=False, separators=(",", ":")) + "\n")
    print("%s: %d texts, nnz mean %.1f" % (path, len(items), sum(len(v) for v in vecs) / len(vecs)))


def golden(name, a, items):
    import sentence_transformers
    import transformers
    from transformers import AutoTokenizer
    d = os.path.join(a.cache, name)
    dd = doc_dir(d)
    tok = AutoTokenizer.from_pretrained(dd)
    routes = ["document"] + (["query"] if os.path.exists(os.path.join(d, "router_config.json")) or
                             os.path.exists(os.path.join(d, "idf.json")) else [])
    for route in routes:
        special = route == "document"
        # the query table's tokenizer truncates at model_max_length (512), as SparseStaticEmbedding does
        ml = a.max_length if special else tok.model_max_length
        ids = [tok(t["text"], truncation=True, max_length=ml, add_special_tokens=special)["input_ids"]
               for t in items]
        full = [len(tok(t["text"], add_special_tokens=special)["input_ids"]) for t in items]
        if os.path.exists(os.path.join(d, "modules.json")):
            vecs, ref = encode_st(d, items, route, a), "sentence-transformers SparseEncoder.encode_%s" % route
        elif route == "query":
            vecs, ref = idf_query(d, items, ml), "idf.json weight of each distinct query token (HF tokenizer)"
        else:
            vecs, ref = encode_hf(d, items, a), "AutoModelForMaskedLM eager; max of log1p(relu(logits))"
        meta = {"model": name, "safetensors_sha256": sha(os.path.join(dd, "model.safetensors")), "route": route,
                "transformers": transformers.__version__, "sentence_transformers": sentence_transformers.__version__,
                "max_length": ml, "threshold": a.threshold, "reference": ref,
                "vocab_size": len(tok.get_vocab())}
        write(os.path.join(a.out, "%s%s.jsonl" % (name, "" if route == "document" else "-query")),
              meta, items, ids, vecs, full)


def tokens_golden(name, a):
    """Token ids only (no forward): more SciFact texts and the multilingual set, untruncated (512)."""
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(doc_dir(os.path.join(a.cache, name)))
    items = []
    for fname, n in (("corpus.jsonl", 60), ("queries.jsonl", 300)):
        with open(os.path.join(a.scifact, fname), encoding="utf-8") as f:
            for line in list(f)[:n]:
                r = json.loads(line)
                items.append(((r.get("title") or "") + " " + (r.get("text") or "")).strip())
    items += MULTILINGUAL + EDGE
    path = os.path.join(a.out, "%s-tokens.jsonl" % name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"meta": {"model": name, "max_length": 512, "reference": "BertTokenizerFast (tokenizers)",
                                     "vocab_size": len(tok.get_vocab())}}) + "\n")
        for t in items:
            f.write(json.dumps({"text": t, "ids": tok(t, truncation=True, max_length=512)["input_ids"]},
                               ensure_ascii=False, separators=(",", ":")) + "\n")
    print("%s: %d texts" % (path, len(items)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scifact", default=os.path.join(REPO, "..", "shared", "data", "scifact"))
    ap.add_argument("--cache", default=os.path.join(REPO, "cache"))
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "models"))
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--threshold", type=float, default=1e-5)
    ap.add_argument("--models", nargs="*", default=[k for k in MODELS if "base" not in k and
                                                    (not k.startswith("real-") or "--models-only" in sys.argv)])
    ap.add_argument("--make", action="store_true", help="(re)write the model folders first")
    ap.add_argument("--models-only", action="store_true",
                    help="only write the missing model folders (no torch; what `make models` runs)")
    a = ap.parse_args()
    for name in a.models:
        if a.make or not os.path.exists(os.path.join(doc_dir(os.path.join(a.cache, name)), "model.safetensors")):
            subprocess.check_call([sys.executable, os.path.join(REPO, "tools", "make_random_model.py"),
                                   "--out", os.path.join(a.cache, name), "--quiet"] + MODELS[name])
    if a.models_only:
        return
    os.makedirs(a.out, exist_ok=True)
    items = texts(a.scifact)
    for name in a.models:
        golden(name, a, items)
        if name == "rand-multi":
            tokens_golden(name, a)


if __name__ == "__main__":
    main()
