#!/usr/bin/env python3
"""../shared/peer/query/peers_query.py with multi-threaded peer builds, for the realistic 1 M
collection on the GPU host (bench/realistic_1m.sh). Build time is not what issue #14 compares at
1 M, and Seismic's one-thread build of 1 M documents takes ~17 minutes: longer than a device call.
Queries are unchanged: one thread, one warm-up pass, one timed call per query.

  PEERS_QUERY=path/to/peers_query.py BUILD_THREADS=16 python3 peers_mt.py SUBCOMMAND ...
"""
import importlib.util
import os

spec = importlib.util.spec_from_file_location("peers_query", os.environ["PEERS_QUERY"])
pq = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pq)
THREADS = int(os.environ.get("BUILD_THREADS", "16"))


def build_seismic(docs, index, p):
    from seismic import SeismicIndex
    kw = {k: p[k] for k in ("n_postings", "centroid_fraction", "summary_energy", "max_fraction",
                            "min_cluster_size", "doc_cut") if k in p}
    ix = SeismicIndex.build(docs, num_threads=THREADS, load_content=False, **kw)
    ix.save(os.path.join(index, "seismic"))
    return {"params": kw, "build_threads": THREADS}


def build_pisa(docs, index, p):
    import shutil
    import pyterrier_pisa as pp
    shutil.rmtree(index, ignore_errors=True)
    ix = pp.PisaIndex(index, stemmer="none", threads=THREADS)
    ix.toks_indexer(scale=float(p.get("scale", 100))).index(
        {"docno": i, "toks": v} for i, v in pq.read_vectors(docs))
    ix.quantized(num_results=pq.K)
    used = [f for f in os.listdir(index) if f.startswith("quantized.") or f.endswith("lex")]
    return {"size_bytes": sum(os.path.getsize(os.path.join(index, f)) for f in used), "build_threads": THREADS}


_recall = pq.recall


def recall_present(run, d, q, q_ids, row_of, kth, top):
    """Recall over the queries the run answered: the slow exact peers run a subset (SLOW_Q)."""
    keep = [i for i, x in enumerate(q_ids) if x in run]
    return _recall(run, d, q[keep], [q_ids[i] for i in keep], row_of, [kth[i] for i in keep],
                   [top[i] for i in keep])


pq.recall = recall_present
pq.SYSTEMS["seismic"] = (build_seismic, pq.query_seismic)
pq.SYSTEMS["pisa"] = (build_pisa, pq.query_pisa)

if __name__ == "__main__":
    pq.main()
