#!/usr/bin/env python3
"""Writes the tokenizer goldens under tests/data/tokenizer/ from the independent reference:
Hugging Face `tokenizers` loading bert-base-uncased's tokenizer.json (no truncation, no padding).

Files (ids always include [CLS] ... [SEP]):
  scifact_docs.tsv, scifact_queries.tsv  id<TAB>n_ids<TAB>fnv1a64 of the ids (16 hex digits), one
      line per SciFact document (text = title + " " + text when the title is non-empty, else
      text: the join include/splade/corpus.h does) / query, in file order. The hash runs over
      each id as 4 little-endian bytes.
  scifact_docs_first100.json  full id lists of the first 100 documents.
  adversarial.json  hand-made edge cases: [{"name", "text", "ids", "ids_cased"}].
  random.json       seeded random strings over many scripts, same fields.
  invalid_utf8.json ill-formed UTF-8: [{"name", "hex", "ids", "ids_cased"}], the reference fed
      bytes.decode("utf-8", errors="replace") (each maximal invalid subpart -> U+FFFD).
  codepoints.tsv    every code point U+0080..U+10FFFF (no surrogates), as the text
      "<c> a<c>b", in blocks of 1024: block_start_hex<TAB>fnv1a64 over the ids of every text of
      the block (uncased)<TAB>the same for the cased pipeline.
ids_cased: the same tokenizer with BertNormalizer(lowercase=False, strip_accents=None), what
BertTokenizerFast(do_lower_case=False) builds (no lowercasing, no accent stripping).
JSON strings use \\u escapes, so NUL and control characters survive.

Usage: python3 tools/make_tokenizer_goldens.py [--shared ../shared] [--out tests/data/tokenizer]
"""
import argparse
import json
import os
import random

from tokenizers import Tokenizer, normalizers

FNV_OFFSET, FNV_PRIME, MASK64 = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def fnv1a64(ids, h=FNV_OFFSET):
    for i in ids:
        for b in int(i).to_bytes(4, "little", signed=True):
            h = ((h ^ b) * FNV_PRIME) & MASK64
    return h


def load_tokenizers(shared):
    path = os.path.join(shared, "data/bert-base-uncased/tokenizer.json")
    uncased = Tokenizer.from_file(path)
    cased = Tokenizer.from_file(path)
    for t in (uncased, cased):
        t.no_truncation()
        t.no_padding()
    cased.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                  strip_accents=None, lowercase=False)
    return uncased, cased


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def doc_text(d):
    title = d.get("title") or ""
    return title + " " + d["text"] if title else d["text"]


def adversarial():
    """(name, text) pairs: one edge each."""
    word100 = "a" * 100
    cases = [
        ("empty", ""), ("spaces", "   "), ("whitespace mix", " \t\n\r \u3000\u00a0 "),
        ("hello", "Hello, world!"), ("accents", "Café naïve résumé Ångström São Paulo"),
        ("precomposed vs combining", "e\u0301 \u00e9 E\u0301"),
        ("stacked combining", "a\u0301\u0302\u0303\u0304 o\u0308\u0304"),
        ("leading combining", "\u0301abc \u0308"),
        ("greek final sigma", "ΣΑΣ Σσς ὈΔΥΣΣΕΎΣ"), ("greek tonos", "Ελληνικά άέήίόύώ ΐΰ"),
        ("turkish dotted I", "İstanbul ıi Iİ DİYARBAKIR"), ("german", "Straße STRASSE ẞ"),
        ("titlecase digraph", "ǅemal ǈ ǋ"), ("ligatures", "ﬁnance ﬃ ﬀ"),
        ("kelvin angstrom ohm", "\u212a \u212b \u2126 5\u212a"),
        ("fullwidth", "ＡＢＣ ｆｕｌｌ １２３ ，。！"), ("superscripts", "x² H₂O 10⁻³ ½"),
        ("roman numerals", "Ⅻ ⅻ Ⅳ"), ("micro sign", "µg μg"),
        ("cjk", "中文字符测试"), ("cjk mixed", "abc中def文ghi"), ("cjk ext b", "𠀀𠀁 x𪜀y"),
        ("cjk compat", "\uf900\uf901 \ufa6e \U0002f800"), ("japanese", "ひらがな カタカナ がぎぐ パピプ"),
        ("korean hangul", "한국어 안녕하세요"), ("hangul 33 syllables", "한" * 33),
        ("hangul 34 syllables", "한" * 34), ("thai", "ภาษาไทยไม่มีช่องว่าง"),
        ("arabic", "العربية مُحَمَّد ٣٤٥"), ("hebrew niqqud", "שָׁלוֹם עברית"),
        ("devanagari mc marks", "हिन्दी क्षि कि की कु"), ("bengali", "বাংলা ভাষা"),
        ("tamil", "தமிழ் மொழி"), ("tibetan", "བོད་ཡིག"), ("ethiopic", "ኢትዮጵያ"),
        ("emoji", "I ❤ emoji 😀😂 👍🏽"), ("emoji zwj", "👨‍👩‍👧‍👦 🏳️‍🌈"),
        ("flags", "🇫🇷🇩🇪"), ("variation selector", "❤\ufe0f ☺\ufe0e"),
        ("control chars", "a\x01b\x02c\x7fd\x1be"), ("nul", "ab\x00cd \x00 x"),
        ("c1 controls", "a\x80b\x85c\x9fd"), ("vt ff", "a\x0bb\x0cc\x1cd\x1fe"),
        ("tabs newlines", "one\ttwo\nthree\r\nfour"), ("line para sep", "a\u2028b\u2029c"),
        ("zero width", "zero\u200bwidth\u200cjoin\u200dx\u2060y\ufeffz"),
        ("soft hyphen", "co\u00adoperate hy\u00ad"), ("replacement char", "bad\ufffdchar \ufffd"),
        ("bidi marks", "abc\u200e\u200fdef\u202a\u202e"), ("private use", "a\ue000b \U000f0000"),
        ("unassigned", "a\u0378b \U000e0080"), ("noncharacters", "a\uffffb\ufdd0c"),
        ("tags", "a\U000e0001\U000e0041b"), ("word 100 chars", word100),
        ("word 101 chars", word100 + "a"), ("word 200 chars", "b" * 200),
        ("100 chars of e-acute", "\u00e9" * 100), ("101 chars of e-acute", "\u00e9" * 101),
        ("combining counted after strip", "e\u0301" * 100), ("long unk-able word", "x" * 99 + "\u2603"),
        ("punctuation runs", "!!!???... --- ((())) ;;;"), ("unicode punctuation", "«quote» ¿qué? ¡sí! — – … ‘’ “”"),
        ("dashes in words", "well-known state-of-the-art e.g. i.e."), ("apostrophes", "don't it's O'Neil"),
        ("numbers", "3.14159 1,000,000 -42 1e-10 2024-01-01"), ("currency math", "$5 €10 £3 ¥9 ∑∫√∞ ±×÷"),
        ("url", "https://example.com/path_to/page?q=a+b&x=1#frag"), ("email", "user.name+tag@mail.example.org"),
        ("code", "int main(void) { return a->b[0] << 2; }"), ("hashes", "#hashtag ##piece a##b ###"),
        ("specials", "[CLS] hello [SEP] [MASK] [PAD] [UNK]"), ("special lowercase", "[mask] [Sep]"),
        ("special glued", "a[MASK]b[[MASK]]"), ("special broken", "[MA\x00SK] [MASK [ MASK]"),
        ("musical reorder", "x\U0001d16d\U0001d165y \U0001d165\U0001d16d"),
        ("mixed reorder", "a\u0316\u0301\u0300b a\u0301\u0316"),
        ("mn barrier", "x\U0001d16d\u034f\U0001d165"),
        ("hf newer unicode", "\u0890\u0891 a\u061db \u0898x \ua7cb \U00011938"),
        ("ypogegrammeni", "ᾳ ᾼ \u0345"), ("mongolian fvs", "ᠮᠣᠩᠭᠣᠯ\u180b\u180c"),
        ("math alnum", "𝐀𝐁𝐂 𝔸𝔹 𝟘𝟙"), ("box drawing", "┌─┐│└┘"),
        ("long text", " ".join(["tokenization"] * 300)),
    ]
    return cases


# Ranges the random strings draw from: many scripts plus the odd corners of Unicode.
RANGES = [
    (0x20, 0x7E), (0x00, 0x1F), (0x7F, 0x9F), (0xA0, 0xFF), (0x100, 0x24F), (0x250, 0x2AF),
    (0x2B0, 0x2FF), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF), (0x530, 0x58F),
    (0x590, 0x5FF), (0x600, 0x6FF), (0x700, 0x74F), (0x780, 0x7BF), (0x800, 0x8FF),
    (0x900, 0x97F), (0x980, 0x9FF), (0xB80, 0xBFF), (0xE00, 0xE7F), (0xE80, 0xEFF),
    (0xF00, 0xFFF), (0x10A0, 0x10FF), (0x1100, 0x11FF), (0x1200, 0x137F), (0x13A0, 0x13FF),
    (0x1700, 0x177F), (0x1800, 0x18AF), (0x1AB0, 0x1AFF), (0x1B00, 0x1BFF), (0x1C80, 0x1CFF),
    (0x1DC0, 0x1DFF), (0x1E00, 0x1FFF), (0x2000, 0x206F), (0x2070, 0x209F), (0x20A0, 0x20CF),
    (0x20D0, 0x20FF), (0x2100, 0x218F), (0x2190, 0x22FF), (0x2460, 0x24FF), (0x2500, 0x257F),
    (0x2600, 0x27BF), (0x2C00, 0x2C7F), (0x2E00, 0x2E7F), (0x3000, 0x303F), (0x3040, 0x30FF),
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA700, 0xA7FF), (0xA800, 0xABFF), (0xAC00, 0xD7A3),
    (0xE000, 0xF8FF), (0xF900, 0xFAFF), (0xFB00, 0xFB4F), (0xFE00, 0xFE6F), (0xFF00, 0xFFEF),
    (0xFFF0, 0xFFFF), (0x10000, 0x1007F), (0x10D00, 0x10D8F), (0x11000, 0x1197F),
    (0x16EA0, 0x16FFF), (0x1D100, 0x1D1FF), (0x1D400, 0x1D7FF), (0x1F000, 0x1FAFF),
    (0x20000, 0x2A6DF), (0x2F800, 0x2FA1F), (0x30000, 0x3134F), (0xE0000, 0xE01EF),
    (0xF0000, 0x10FFFF), (0x0, 0x10FFFF),
]


def random_char(rng):
    while True:
        lo, hi = rng.choice(RANGES)
        cp = rng.randint(lo, hi)
        if not 0xD800 <= cp <= 0xDFFF:
            return chr(cp)


def random_strings(n, seed=20240611):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        parts = []
        for _ in range(rng.randint(1, 40)):
            r = rng.random()
            if r < 0.12:
                parts.append(" ")
            elif r < 0.25:
                parts.append(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"))
            elif r < 0.27:
                parts.append(rng.choice(["[MASK]", "[SEP]", "[", "##", "-"]))
            else:
                parts.append(random_char(rng))
        out.append(("random %d" % i, "".join(parts)))
    return out


def invalid_utf8():
    """(name, bytes): ill-formed UTF-8, each followed by text that must survive."""
    return [
        ("lone continuation", b"ab\x80cd"), ("lone lead 2", b"ab\xc3 cd"), ("lone lead 3", b"x\xe2\x82y"),
        ("truncated 4 at end", b"word\xf0\x9f\x98"), ("overlong slash", b"a\xc0\xafb"),
        ("overlong 3", b"a\xe0\x80\xafb"), ("overlong 4", b"a\xf0\x80\x80\xafb"),
        ("surrogate", b"a\xed\xa0\x80b"), ("above 10FFFF", b"a\xf4\x90\x80\x80b"),
        ("f5..ff", b"a\xf5\xff\xfeb"), ("invalid then ascii", b"\xe2\x28\xa1 caf\xc3\xa9"),
        ("lead then lead", b"\xc3\xc3\xa9t\xc3\xa9"), ("all bytes 80-ff", bytes(range(0x80, 0x100))),
        ("inside a word", b"hel\xfflo wor\x80ld"), ("special split by invalid", b"[MA\xffSK] [MASK]"),
        ("only invalid", b"\xff\xfe\xfd"), ("between combining", b"e\xcc\x81\xff\xcc\x80"),
    ]


def encode_all(tok, texts):
    return [e.ids for e in tok.encode_batch(texts)]


def write_json(path, records):
    """A JSON array, one compact record per line (diffable, small)."""
    with open(path, "w", encoding="ascii") as f:
        f.write("[\n")
        f.write(",\n".join(json.dumps(r, ensure_ascii=True, separators=(",", ":")) for r in records))
        f.write("\n]\n")


def text_records(cases, uncased, cased):
    texts = [t for _, t in cases]
    ids, idc = encode_all(uncased, texts), encode_all(cased, texts)
    return [{"name": n, "text": t, "ids": a, "ids_cased": b} for (n, t), a, b in zip(cases, ids, idc)]


def write_scifact(shared, out, uncased):
    docs = read_jsonl(os.path.join(shared, "data/scifact/corpus.jsonl"))
    queries = read_jsonl(os.path.join(shared, "data/scifact/queries.jsonl"))
    for name, recs, text in (("docs", docs, doc_text), ("queries", queries, lambda q: q["text"])):
        ids = encode_all(uncased, [text(r) for r in recs])
        with open(os.path.join(out, "scifact_%s.tsv" % name), "w") as f:
            for r, i in zip(recs, ids):
                f.write("%s\t%d\t%016x\n" % (r["_id"], len(i), fnv1a64(i)))
        if name == "docs":
            check_truncation(uncased, [text(r) for r in recs[:20]], ids[:20])
            write_json(os.path.join(out, "scifact_docs_first100.json"),
                       [{"id": r["_id"], "ids": i} for r, i in zip(recs[:100], ids[:100])])


def check_truncation(tok, texts, full):
    """The test's premise: HF's truncation to n is the first n-1 ids plus [SEP]."""
    for n in (2, 3, 16, 128, 512):
        tok.enable_truncation(n)
        for t, f in zip(texts, full):
            want = f if len(f) <= n else f[:n - 1] + [f[-1]]
            assert tok.encode(t).ids == want, (n, t[:40])
    tok.no_truncation()


def write_codepoints(out, uncased, cased):
    cps = [c for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF]
    blocks = {}
    for c in cps:
        blocks.setdefault(c & ~1023, []).append(c)
    with open(os.path.join(out, "codepoints.tsv"), "w") as f:
        for start in sorted(blocks):
            texts = ["%s a%sb" % (chr(c), chr(c)) for c in blocks[start]]
            hu = hc = FNV_OFFSET
            for i in encode_all(uncased, texts):
                hu = fnv1a64(i, hu)
            for i in encode_all(cased, texts):
                hc = fnv1a64(i, hc)
            f.write("%x\t%016x\t%016x\n" % (start, hu, hc))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--out", default="tests/data/tokenizer")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    uncased, cased = load_tokenizers(a.shared)
    write_scifact(a.shared, a.out, uncased)
    write_json(os.path.join(a.out, "adversarial.json"), text_records(adversarial(), uncased, cased))
    write_json(os.path.join(a.out, "random.json"), text_records(random_strings(500), uncased, cased))
    bad = invalid_utf8()
    recs = text_records([(n, b.decode("utf-8", errors="replace")) for n, b in bad], uncased, cased)
    write_json(os.path.join(a.out, "invalid_utf8.json"),
               [{"name": r["name"], "hex": b.hex(), "ids": r["ids"], "ids_cased": r["ids_cased"]}
                for r, (_, b) in zip(recs, bad)])
    write_codepoints(a.out, uncased, cased)


if __name__ == "__main__":
    main()
