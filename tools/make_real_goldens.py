#!/usr/bin/env python3
"""Goldens made with the REAL tokenizer and query-table files of the models of issue 15 (placed in
cache/real/ by tools/fetch_real_tokenizers.py; sources in data/README.md), and the small committed
files that let CI run the same checks without them (tests/test_models_real.c):

  tests/data/models/real/mbert-uncased-vocab.txt.gz   the multilingual model's 105,879-term vocabulary,
                                                     as its tokenizer.json holds it (ids in order)
  tests/data/models/real/{bert,mbert}-uncased-tokens.jsonl
        token ids of HF `tokenizers` (Tokenizer.from_file on the real tokenizer.json; transformers'
        AutoTokenizer must agree) on SciFact documents and queries and a multilingual set
  tests/data/models/real/{bert,mbert}-uncased-idf-excerpt.json
        the real idf.json restricted to the tokens of those texts (plus the multilingual file's
        two keys its tokenizer.json spells differently): the query goldens hold with it
  tests/data/models/real/<model>[-query].jsonl
        vectors of random-weight models that carry the real tokenizer and idf.json:
        documents from transformers / sentence-transformers, queries from sentence-transformers'
        SparseStaticEmbedding.from_json on the FULL real idf.json (the OpenSearch definition,
        idf.get(token, 1.0) over the distinct non-special tokens, is compared and reported)

  python3 tools/make_real_goldens.py                 # small models (CI) + tokens + excerpts
  python3 tools/make_real_goldens.py --real-shapes   # also the DistilBERT-base / BERT-base models

Small models: `make models` builds them from the committed vocabulary and excerpts
(tools/make_model_goldens.py MODELS "real-*"); this script builds its own copies from the full real
files under cache/real-src/ and checks both give the same weights.
"""
import argparse
import gzip
import hashlib
import importlib.util
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "tests", "data", "models", "real")
CACHE = os.path.join(REPO, "cache")
REAL = os.path.join(CACHE, "real")
CONFIGS = os.path.join(REPO, "data", "real-configs")
SHARED = os.environ.get("SPLADE_SHARED", os.path.join(REPO, "..", "shared"))

spec = importlib.util.spec_from_file_location("mmg", os.path.join(REPO, "tools", "make_model_goldens.py"))
mmg = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mmg)

# A multilingual set of our making: the model's 15 languages and more scripts, and the characters
# where BERT normalizers differ (accents, Hangul decomposition, Thai/Devanagari marks, emoji
# sequences, full-width forms, ligatures, Turkish dotted I, final sigma, odd spaces and controls).
MULTILINGUAL_REAL = mmg.MULTILINGUAL + [
    "Les élèves français étudient à l'université ; garçon, naïveté, cœur, Noël.",
    "El niño pequeño comió piñatas en España; ¿dónde está la información?",
    "Tiếng Việt có rất nhiều dấu: người, được, những, quốc ngữ.",
    "Zażółć gęślą jaźń. Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "İstanbul'da ıslak ılık bir gün; IĞDIR, şeker, çiçek.",
    "Хлопці з України та Србија: їжак, ґанок, љубав, њива, ђак.",
    "ΣΊΣΥΦΟΣ ὀδυσσεύς ἄνθρωπος — οδός, ψυχή, ς σ Σ.",
    "زبان فارسی بسیار زیباست؛ کتاب‌ها و دانشگاه‌ها.",
    "اَلْعَرَبِيَّةُ لُغَةٌ جَمِيلَةٌ",
    "বাংলা ভাষায় তথ্য অনুসন্ধান গুরুত্বপূর্ণ।",
    "తెలుగు భాషలో సమాచార శోధన.",
    "नमस्ते दुनिया! क्षत्रिय, ज्ञान, श्रृंखला।",
    "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ ผู้ใหญ่ น้ำ",
    "Habari ya asubuhi; ninapenda kusoma vitabu vya Kiswahili.",
    "Hyvää huomenta! Järjestelmä löytää äänet ja öljyn.",
    "Bahasa Indonesia: pencarian informasi yang cepat dan akurat.",
    "한국어 정보 검색 시스템은 빠르다. 가나다라마바사",
    "日本語の文章：東京タワーは高い。ｶﾀｶﾅ ﾊﾝｶｸ",
    "繁體中文與简体中文：資訊檢索、信息检索。",
    "Emoji: 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️ 🧪 ☕ 1️⃣",
    "Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ １２３ and ligatures ﬁ ﬂ ǅ Ⅻ ½ ² ℌ",
    "spaces:\u00a0nbsp\u2009thin\u3000ideo\u2028line\u2029para zero\u200bwidth soft\u00adhyphen tab\there",
    "controls:\u0001\u0007\u001f and combining: e\u0301 a\u0308 n\u0303 o\u0328 \u0301alone",
    "Cherokee ᏣᎳᎩ Armenian Հայերեն Ethiopic አማርኛ Tibetan བོད་ཡིག Khmer ភាសាខ្មែរ",
    "Math 𝐀𝐁𝐂 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and old 𐌰𐌱 and CJK ext 𠀀𠀁 and rare 𫚒",
]
EDGE = mmg.EDGE + ["[CLS] [SEP] [MASK] [UNK] [PAD] inside text", "ab" * 150]

# name -> (make_random_model args, tokenizer, real-shape?)
MODELS = {
    "real-docv2-small": (["--arch", "distilbert", "--hidden", "64", "--heads", "2", "--layers", "1",
                          "--intermediate", "128", "--tie", "--idf", "--vocab-bias", "-16"], "bert-uncased", False),
    "real-multi-small": (["--hidden", "64", "--heads", "2", "--layers", "1", "--intermediate", "128", "--tie",
                          "--idf", "--vocab-bias", "-17"], "mbert-uncased", False),
    "real-docv3-distill": (["--arch", "distilbert", "--hidden", "768", "--heads", "12", "--layers", "6",
                            "--intermediate", "3072", "--tie", "--router", "--activation", "log1p_relu", "--numpy",
                            "--vocab-bias", "-9", "--emb-std", "0.1", "--pooling-json", "splade-pooling-max-log1p_relu.json",
                            "--config-json", "opensearch-neural-sparse-encoding-doc-v2-distill.config.json"],
                           "bert-uncased", True),
    "real-splade-v3-distilbert": (["--arch", "distilbert", "--hidden", "768", "--heads", "12", "--layers", "6",
                                   "--intermediate", "3072", "--tie", "--numpy", "--vocab-bias", "-9", "--emb-std", "0.1", "--seed", "4321",
                                   "--config-json", "splade-v3-distilbert.config.json",
                                   "--tokenizer-config", "splade-v3-distilbert.tokenizer_config.json"], "bert-uncased", True),
    "real-multilingual-v1": (["--hidden", "768", "--heads", "12", "--layers", "12", "--intermediate", "3072",
                              "--tie", "--idf", "--numpy", "--vocab-bias", "-9", "--emb-std", "0.1", "--config-json",
                              "opensearch-neural-sparse-encoding-multilingual-v1.config.json"], "mbert-uncased", True),
}


def real_file(tok, name):
    p = os.path.join(REAL, tok, name)
    if not os.path.exists(p):
        sys.exit("make_real_goldens: %s absent: run tools/fetch_real_tokenizers.py first" % p)
    return p


def vocab_of(tj):
    with open(tj, encoding="utf-8") as f:
        v = json.load(f)["model"]["vocab"]
    return sorted(v, key=v.get)


def write_vocab_gz(tok):
    """Deterministic bytes (mtime 0), so rerunning the script changes nothing."""
    text = "".join(t + "\n" for t in vocab_of(real_file(tok, "tokenizer.json"))).encode()
    path = os.path.join(OUT, "%s-vocab.txt.gz" % tok)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9) as f:
        f.write(text)
    print("%s: %d bytes (%d raw)" % (path, os.path.getsize(path), len(text)))


def scifact_texts(scifact, n_docs, n_queries):
    out = []
    for fname, n in (("corpus.jsonl", n_docs), ("queries.jsonl", n_queries)):
        with open(os.path.join(scifact, fname), encoding="utf-8") as f:
            for line in list(f)[:n]:
                r = json.loads(line)
                out.append(((r.get("title") or "") + " " + (r.get("text") or "")).strip())
    return out


def token_goldens(tok, texts):
    """HF tokenizers on the real tokenizer.json; transformers' tokenizer on a folder with it must agree."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer
    import tokenizers
    tj = real_file(tok, "tokenizer.json")
    ref = Tokenizer.from_file(tj)
    ref.enable_truncation(512)
    folder = os.path.join(CACHE, "real-src", tok + "-tokenizer")
    os.makedirs(folder, exist_ok=True)
    subprocess.check_call(["cp", tj, os.path.join(folder, "tokenizer.json")])
    spec_mrm = importlib.util.spec_from_file_location("mrm", os.path.join(REPO, "tools", "make_random_model.py"))
    mrm = importlib.util.module_from_spec(spec_mrm)
    spec_mrm.loader.exec_module(mrm)
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(mrm.tokenizer_config(tj), f)
    hf = AutoTokenizer.from_pretrained(folder)
    path = os.path.join(OUT, "%s-tokens.jsonl" % tok)
    used = set()
    with open(path, "w", encoding="utf-8") as f:
        with open(tj, "rb") as g:
            sha = hashlib.sha256(g.read()).hexdigest()
        f.write(json.dumps({"meta": {"tokenizer_json_sha256": sha, "max_length": 512, "tokenizers": tokenizers.__version__,
                                     "reference": "tokenizers.Tokenizer.from_file(real tokenizer.json), "
                                                  "truncation 512; transformers AutoTokenizer agrees"}}) + "\n")
        for t in texts:
            ids = ref.encode(t).ids
            alt = hf(t, truncation=True, max_length=512)["input_ids"]
            if ids != alt:
                sys.exit("make_real_goldens: tokenizers and transformers disagree on %r" % t[:60])
            used.update(ids)
            f.write(json.dumps({"text": t, "ids": ids}, ensure_ascii=False, separators=(",", ":")) + "\n")
    print("%s: %d texts" % (path, len(texts)))
    return used


def write_excerpt(tok, used):
    """The real idf.json's entries for the tokens the goldens use (and any key the tokenizer.json
    vocabulary does not hold: the engine must map those as the references do)."""
    with open(real_file(tok, "idf.json"), encoding="utf-8") as f:
        idf = json.load(f)
    vocab = vocab_of(real_file(tok, "tokenizer.json"))
    keep = {vocab[i] for i in used} | (set(idf) - set(vocab))
    ex = {k: v for k, v in idf.items() if k in keep}
    path = os.path.join(OUT, "%s-idf-excerpt.json" % tok)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(ex, f, ensure_ascii=False, separators=(",", ":"))
    print("%s: %d of %d entries" % (path, len(ex), len(idf)))


def build(name, src):
    """cache/real-src/NAME from the full real files (src=True) or cache/NAME from the committed ones."""
    args, tok, _ = MODELS[name]
    out = os.path.join(CACHE, "real-src" if src else "", name)
    extra = []
    for i, x in enumerate(args):
        if i and args[i - 1] in ("--pooling-json", "--config-json", "--tokenizer-config"):
            args = args[:i] + [os.path.join(CONFIGS, x)] + args[i + 1:]
    if src:
        extra = ["--tokenizer-json", real_file(tok, "tokenizer.json"), "--idf-file", real_file(tok, "idf.json")]
    else:
        args = mmg.MODELS[name]
    subprocess.check_call([sys.executable, os.path.join(REPO, "tools", "make_random_model.py"), "--out", out,
                           "--quiet"] + args + extra)
    return out


def st_query_check(d, tok, gold):
    """sentence-transformers' SparseStaticEmbedding.from_json on the real idf.json, and the OpenSearch
    definition, against the golden query vectors (which idf_query made)."""
    from sentence_transformers.sparse_encoder.modules import SparseStaticEmbedding
    from transformers import AutoTokenizer
    hf = AutoTokenizer.from_pretrained(d)
    sse = SparseStaticEmbedding.from_json(real_file(tok, "idf.json"), tokenizer=hf, frozen=True)
    with open(real_file(tok, "idf.json"), encoding="utf-8") as f:
        idf = json.load(f)
    special = set(hf.all_special_ids)
    rows = [json.loads(l) for l in open(gold, encoding="utf-8")][1:]
    os_diff = 0
    for r in rows:
        feats = sse.preprocess([r["text"]])
        emb = sse(feats)["sentence_embedding"][0]
        st = {i: float(emb[i]) for i in emb.nonzero().flatten().tolist()}
        mine = {i: w for i, w in r["vec"]}
        if set(st) != set(mine) or any(abs(st[i] - mine[i]) > 1e-6 for i in st):
            sys.exit("make_real_goldens: %s: SparseStaticEmbedding differs from the golden on %s" % (gold, r["id"]))
        ids = hf(r["text"], truncation=True, max_length=512)["input_ids"]  # with specials, as OpenSearch encodes
        toks = hf.convert_ids_to_tokens(sorted(set(i for i in ids if i not in special)))
        osd = {hf.convert_tokens_to_ids(t): idf.get(t, 1.0) for t in toks}
        os_diff += set(osd) != set(mine) or any(abs(osd[i] - mine[i]) > 1e-6 for i in osd)
    return len(rows), os_diff


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scifact", default=os.path.join(SHARED, "data", "scifact"))
    ap.add_argument("--real-shapes", action="store_true", help="also the DistilBERT-base / BERT-base models")
    ap.add_argument("--models", nargs="*", help="only these (default: all small ones, and the real shapes with "
                    "--real-shapes)")
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--threshold", type=float, default=1e-5)
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    texts = scifact_texts(a.scifact, 25, 200) + MULTILINGUAL_REAL + EDGE
    write_vocab_gz("mbert-uncased")
    for tok in ("bert-uncased", "mbert-uncased"):
        write_excerpt(tok, token_goldens(tok, texts))
    # vector goldens: SciFact documents and queries, the multilingual set, edge cases
    sci = mmg.texts(a.scifact)
    items = sci[:6] + sci[12:16] + [{"id": "ml%d" % i, "text": t} for i, t in enumerate(MULTILINGUAL_REAL)]
    items += [{"id": "edge%d" % i, "text": t} for i, t in enumerate(EDGE)]
    names = a.models or [n for n, m in MODELS.items() if a.real_shapes or not m[2]]
    ns = argparse.Namespace(cache=os.path.join(CACHE, "real-src"), out=OUT, max_length=a.max_length,
                            threshold=a.threshold)
    for name in names:
        d = build(name, True)
        if not MODELS[name][2]:  # the CI copy, from committed files, must have the same weights
            c = build(name, False)
            if mmg.sha(os.path.join(c, "model.safetensors")) != mmg.sha(os.path.join(d, "model.safetensors")):
                sys.exit("make_real_goldens: cache/%s differs from cache/real-src/%s" % (name, name))
        sub = items if not MODELS[name][2] else items[:4] + items[6:8] + items[10:16] + items[26:30]
        mmg.golden(name, ns, sub)
        q = os.path.join(OUT, name + "-query.jsonl")
        if os.path.exists(q):
            n, osd = st_query_check(mmg.doc_dir(d), MODELS[name][1], q)
            print("  %s: SparseStaticEmbedding.from_json equal on %d queries; OpenSearch's definition differs on %d"
                  % (q, n, osd))


if __name__ == "__main__":
    main()
