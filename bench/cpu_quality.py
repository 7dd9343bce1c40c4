#!/usr/bin/env python3
"""Top-k agreement of two `splade-index encode` outputs of the same texts (e.g. the CPU's
--precision bf16 against fp32): for each text, the share of the reference's top-k terms (by
weight) found in the other's top-k; plus max |diff| and relative L2 over all weights.

  python3 bench/cpu_quality.py REF.jsonl OTHER.jsonl [-k 50]
"""
import argparse
import json
import math


def load(path):
    with open(path) as f:
        return [json.loads(l)["vector"] for l in f]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ref")
    ap.add_argument("other")
    ap.add_argument("-k", type=int, default=50)
    a = ap.parse_args()
    ref, oth = load(a.ref), load(a.other)
    assert len(ref) == len(oth), "different numbers of texts"
    agree, worst, num, den = [], 0.0, 0.0, 0.0
    for r, o in zip(ref, oth):
        top = lambda v: set(sorted(v, key=lambda t: (-v[t], t))[:a.k])
        tr = top(r)
        if tr:
            agree.append(len(tr & top(o)) / len(tr))
        for t in set(r) | set(o):
            d = r.get(t, 0.0) - o.get(t, 0.0)
            worst = max(worst, abs(d))
            num += d * d
            den += r.get(t, 0.0) ** 2
    agree.sort()
    print("%d texts: top-%d agreement mean %.4f, 1st percentile %.3f, min %.3f; max |diff| %.4f, rel. L2 %.4f"
          % (len(ref), a.k, sum(agree) / len(agree), agree[len(agree) // 100], agree[0], worst, math.sqrt(num / den)))


if __name__ == "__main__":
    main()
