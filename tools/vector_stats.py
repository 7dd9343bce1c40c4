#!/usr/bin/env python3
"""Statistics of SPLADE vectors (`splade-index encode` JSONL) for bench/results/query-*.md: terms per
document and per query, the weight distribution, and the posting-length distribution (documents per
term), the figures published for MS MARCO SPLADE collections are compared against.

  python3 tools/vector_stats.py DOCS.jsonl QUERIES.jsonl [--max-docs N]  -> a Markdown table on stdout
"""
import argparse
import collections
import json

import numpy as np


def read(path, limit=None):
    lens, weights, df = [], [], collections.Counter()
    with open(path) as f:
        for i, line in enumerate(f):
            if limit and i >= limit:
                break
            v = json.loads(line)["vector"]
            lens.append(len(v))
            weights.extend(v.values())
            df.update(v.keys())
    return np.array(lens), np.array(weights, dtype=np.float32), df


def q(a, ps=(10, 50, 90, 99)):
    return " / ".join(f"{np.percentile(a, p):.3g}" for p in ps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("docs")
    ap.add_argument("queries")
    ap.add_argument("--max-docs", type=int)
    a = ap.parse_args()
    dl, dw, df = read(a.docs, a.max_docs)
    ql, qw, qdf = read(a.queries)
    n = len(dl)
    plen = np.array(sorted(df.values()))
    # per query: postings it touches (sum of its terms' list lengths) as a fraction of the documents
    touched = []
    with open(a.queries) as f:
        for line in f:
            touched.append(sum(df.get(t, 0) for t in json.loads(line)["vector"]))
    touched = np.array(touched) / n
    share_long = plen[plen >= 0.1 * n].sum() / plen.sum()
    print(f"| statistic | value (p10 / p50 / p90 / p99 where four) |\n| --- | --- |")
    print(f"| documents | {n:,} |")
    print(f"| terms per document: mean, percentiles | {dl.mean():.1f}; {q(dl)} |")
    print(f"| terms per query: mean, percentiles ({len(ql):,} queries) | {ql.mean():.1f}; {q(ql)} |")
    print(f"| document weights | {q(dw)} (max {dw.max():.3g}) |")
    print(f"| query weights | {q(qw)} (max {qw.max():.3g}) |")
    print(f"| distinct terms in the documents | {len(plen):,} |")
    print(f"| posting-list length (documents per term) | {q(plen)} (max {plen.max():,} = {plen.max() / n:.0%} of docs) |")
    print(f"| share of postings in lists covering >= 10% of the documents | {share_long:.0%} |")
    print(f"| postings per query / documents (mean, p50, p99) | {touched.mean():.2f}, {np.median(touched):.2f}, "
          f"{np.percentile(touched, 99):.2f} |")


if __name__ == "__main__":
    main()
