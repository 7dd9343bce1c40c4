#!/usr/bin/env python3
"""A realistic query-speed collection from real text (issue #14): SciFact's sentences recombined into
N new documents of passage length, written as BEIR JSONL for `splade-index encode`, plus the real
SciFact queries. Synthetic vectors (Zipf terms) flatter block-max methods; real text encoded by a
real SPLADE model gives the skewed, topical term statistics search actually meets.

Each document is a run of consecutive sentences of one SciFact abstract (topical coherence), and
with probability MIX a second run from another abstract (documents are not copies of the 5,183
sources), cut to a length drawn from a log-normal around MS MARCO passages' (mean ~56 words, Nguyen
et al. 2016; median ~50). Fixed seed: the same N gives the same file.

  python3 tools/make_realistic_collection.py N OUT_DIR [--seed 1]
  -> OUT_DIR/corpus.jsonl ({"_id","title":"","text"}), OUT_DIR/queries.jsonl (SciFact's, copied)
Then encode with our CLI (see bench/results/query-2026-11-25.md for the command and timings):
  splade-index encode --model cache/splade-tiny --threads T --input OUT_DIR/corpus.jsonl > OUT_DIR/docs.vec.jsonl
"""
import argparse
import json
import os
import random
import re
import shutil

SCIFACT = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "scifact")
MIX = 0.5
SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")


def sentences(corpus):
    """Per abstract, its title and sentences (a light splitter: exact boundaries do not matter)."""
    out = []
    with open(corpus) as f:
        for line in f:
            d = json.loads(line)
            s = [x for x in SPLIT.split(d["text"]) if len(x.split()) >= 3]
            if s:
                out.append(s)
    return out


def run_of(abstract, rng, words):
    """Consecutive sentences of one abstract from a random start, about `words` words."""
    i = rng.randrange(len(abstract))
    out, n = [], 0
    while n < words:
        out.append(abstract[i % len(abstract)])
        n += len(out[-1].split())
        i += 1
        if i % len(abstract) == 0 and len(out) >= len(abstract):
            break
    return out


def make_doc(abstracts, rng):
    words = max(12, min(220, int(rng.lognormvariate(3.93, 0.45))))  # median ~51, mean ~56 words
    a = rng.choice(abstracts)
    if rng.random() < MIX:
        first = max(6, int(words * rng.uniform(0.3, 0.7)))
        parts = run_of(a, rng, first) + run_of(rng.choice(abstracts), rng, words - first)
    else:
        parts = run_of(a, rng, words)
    text = " ".join(parts).split()
    return " ".join(text[: words + 15])  # a sentence may overrun: trim long tails


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", type=int)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scifact", default=SCIFACT, help="BEIR SciFact folder (default ../shared/data/scifact; "
                    "the GPU machine has no ../shared: bench/realistic_1m.sh passes its carried copy)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    abstracts = sentences(os.path.join(a.scifact, "corpus.jsonl"))
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "corpus.jsonl"), "w") as f:
        for i in range(a.n):
            f.write(json.dumps({"_id": f"r{i}", "title": "", "text": make_doc(abstracts, rng)}) + "\n")
    shutil.copy(os.path.join(a.scifact, "queries.jsonl"), os.path.join(a.out, "queries.jsonl"))


if __name__ == "__main__":
    main()
