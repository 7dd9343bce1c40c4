#!/usr/bin/env python3
"""Writes the eval test inputs (small TREC runs + qrels) and their golden metrics, computed by
pytrec_eval (trec_eval's own code), into tests/data/eval/.

    pip install pytrec_eval-terrier && python3 tools/make_eval_goldens.py

Golden means follow trec_eval: queries in the run with at least one relevant (rel >= 1) judged
document. ndcg@k is trec_eval's ndcg_cut_k, recall@k recall_k, p@k P_k, map map; mrr@10 is
trec_eval's recip_rank over the run cut to its first 10 documents in trec_eval's order (score
descending, docno descending), i.e. `trec_eval -M 10 -m recip_rank`. (ir-measures' RR@10 was
tried and rejected: it breaks score ties by docno ascending, unlike trec_eval.) tests/test_eval.c compares splade-index eval's values to these to 1e-6."""
import json
import os
import random

import pytrec_eval

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "eval")
MEASURES = {"ndcg@10": "ndcg_cut_10", "ndcg@3": "ndcg_cut_3", "recall@100": "recall_100",
            "recall@5": "recall_5", "p@5": "P_5", "map": "map"}


def random_case(seed):
    rnd = random.Random(seed)
    qrels, run = {}, {}
    docs = [f"D{i:03d}" for i in range(120)]
    for q in range(25):
        qid = f"q{q}"
        if q % 6 != 5:  # some run queries have no qrels at all
            judged = rnd.sample(docs, rnd.randint(1, 15))
            qrels[qid] = {d: rnd.choice([0, 0, 1, 1, 2, 3]) for d in judged}
        if q % 8 != 7:  # some judged queries have no run
            retrieved = rnd.sample(docs, rnd.randint(1, 60))
            # one decimal: many ties, resolved by docno descending
            run[qid] = {d: round(rnd.uniform(-2, 5), 1) for d in retrieved}
    qrels["q3"] = {d: 0 for d in rnd.sample(docs, 4)}  # judged, nothing relevant
    return qrels, run


def edge_case():
    qrels = {
        "tie": {"a": 1, "b": 2, "c": 0},
        "norel": {"a": 0, "z": 0},
        "unretrieved": {"x": 1, "y": 3},
        "graded": {"d1": 3, "d2": 2, "d3": 1, "d4": 1, "d5": 2},
        "short": {"only": 1},
    }
    run = {
        "tie": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 2.0},         # order: d, c, b, a
        "norel": {"a": 3.0},
        "unretrieved": {"p": 1.0, "q": 0.5},
        "graded": {"d5": -1.0, "d4": 0.0, "d3": 0.25, "d2": 0.5, "d1": 0.75, "n1": 0.8},
        "short": {"only": 0.1},
        "unjudged": {"a": 1.0},
    }
    return qrels, run


def trec_order(docs):
    return sorted(docs.items(), key=lambda kv: (-kv[1], [-ord(c) for c in kv[0]] + [1]))


def write_run(path, run, reverse_ranks):
    with open(path, "w") as f:
        for qid in sorted(run):
            ranked = trec_order(run[qid])
            for i, (d, s) in enumerate(ranked):
                rank = len(ranked) - i if reverse_ranks else i + 1  # trec_eval ignores this column
                f.write(f"{qid} Q0 {d} {rank} {s} test\n")


def write_qrels(stem, qrels):
    with open(stem + ".qrels.tsv", "w") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid in sorted(qrels):
            for d, r in sorted(qrels[qid].items()):
                f.write(f"{qid}\t{d}\t{r}\n")
    with open(stem + ".qrels.trec", "w") as f:
        for qid in sorted(qrels):
            for d, r in sorted(qrels[qid].items()):
                f.write(f"{qid} 0 {d} {r}\n")


def goldens(qrels, run):
    ev = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values()))
    per = ev.evaluate(run)
    top10 = {q: dict(trec_order(d)[:10]) for q, d in run.items()}
    rr = {q: v["recip_rank"] for q, v in
          pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10).items()}
    kept = sorted(q for q in per if any(r >= 1 for r in qrels[q].values()))
    out = {"queries": len(kept), "mean": {}, "per_query": {}}
    for name, te in list(MEASURES.items()) + [("mrr@10", None)]:
        vals = {q: (rr.get(q, 0.0) if te is None else per[q][te]) for q in kept}
        out["per_query"][name] = vals
        out["mean"][name] = sum(vals.values()) / len(kept)
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    cases = {"random1": random_case(1), "random2": random_case(2), "edge": edge_case()}
    golden = {}
    for name, (qrels, run) in cases.items():
        stem = os.path.join(OUT, name)
        write_run(stem + ".trec", run, reverse_ranks=(name == "random2"))
        write_qrels(stem, qrels)
        golden[name] = goldens(qrels, run)
    with open(os.path.join(OUT, "golden.json"), "w") as f:
        json.dump(golden, f, indent=1, sort_keys=True)
    # flat form for the C test: case metric qid value (qid "all" = mean)
    with open(os.path.join(OUT, "golden.tsv"), "w") as f:
        for name in sorted(golden):
            g = golden[name]
            f.write(f"{name}\tqueries\tall\t{g['queries']}\n")
            for m in sorted(g["mean"]):
                f.write(f"{name}\t{m}\tall\t{g['mean'][m]:.12f}\n")
                for q, v in sorted(g["per_query"][m].items()):
                    f.write(f"{name}\t{m}\t{q}\t{v:.12f}\n")


if __name__ == "__main__":
    main()
