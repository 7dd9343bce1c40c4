#!/usr/bin/env python3
"""splade-index's CPU encoder against ONNX Runtime (CPU) on the same weights, ids and cores.

  python3 bench/cpu_peer.py [--models cache/splade-tiny cache/rand-bert-base] [--threads 1 2]
                            [--reps 2] [--queries 40] [--docs 8] [--precision fp32 fp32-full bf16 int8]

For each model: tools/export_onnx.py's graph of the same safetensors (written to tmp/ once);
real SciFact texts tokenized by our tokenizer (the same ids go to both engines): queries cut at
32 tokens, documents (title + text) at 256 and at 512. Each (threads, engine) is a fresh
process pinned with taskset to the first THREADS cores, and the engines alternate (ours, ORT,
ours, ORT: A B A B), so both see the same machine load; the load average is printed per row.
Queries go one at a time (latency median / p99); documents one per call for ORT (no padding) and
in batches of 8 for ours (packed, no padding either), docs/s = documents / summed call time.
A numerics check compares every vector (ours vs ORT, max |diff| over the vocabulary).
Also runs bench_cpu_peak (fp32 / bf16 / int8 peaks per CPU second) so rows read as a fraction of
the limit: GFLOP per CPU second of the whole forward (process CPU time, so waiting for a core on a
shared machine does not count; ORT's and our pools' spinning does) against the fp32 FMA peak.
Needs: make NO_CUDA=1 BUILD=build-nc plus its bench_encode_ids and bench_cpu_peak (the tokenizer is
build-nc/splade-index's), pip onnx onnxruntime safetensors numpy.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tokenize(cli, model, texts, max_length):
    """Our tokenizer's ids (`splade-index tokenize`, identical to BertTokenizerFast), one list per text."""
    r = subprocess.run([cli, "tokenize", "--model", model, "--max-length", str(max_length)], check=True,
                       input="\n".join(" ".join(t.split()) for t in texts) + "\n", capture_output=True, text=True)
    out = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    assert len(out) == len(texts), "tokenize: %d lines for %d texts" % (len(out), len(texts))
    return out


def load_texts(shared, n_q, n_d):
    d = os.path.join(shared, "data", "scifact")
    qs = [json.loads(l)["text"] for l in open(os.path.join(d, "queries.jsonl"))][:n_q]
    docs = []
    for l in open(os.path.join(d, "corpus.jsonl")):
        j = json.loads(l)
        docs.append((j.get("title", "") + " " + j.get("text", "")).strip())
        if len(docs) >= n_d:
            break
    return qs, docs


def write_ids(path, seqs):
    with open(path, "wb") as f:
        f.write(struct.pack("<i", len(seqs)))
        f.write(struct.pack("<%di" % len(seqs), *map(len, seqs)))
        for s in seqs:
            f.write(struct.pack("<%di" % len(s), *s))


def read_vectors(path, n, V):
    out = np.zeros((n, V), dtype=np.float32)
    with open(path, "rb") as f:
        for i in range(n):
            (k,) = struct.unpack("<i", f.read(4))
            t = np.frombuffer(f.read(4 * k), dtype="<i4")
            w = np.frombuffer(f.read(4 * k), dtype="<f4")
            out[i, t] = w
    return out


def loadavg():
    return float(open("/proc/loadavg").read().split()[0])


FIRST_CORE = 0  # --first-core: a busy host's first cores take its interrupts and daemons


def cores(threads):
    return ",".join(str(FIRST_CORE + i) for i in range(threads))


def run_ours(bindir, model, ids_file, threads, batch, vec_out="-", precision="fp32"):
    """precision "fp32-full": fp32 with every LM-head logit in fp32 (SPLADE_LMHEAD_CPU=full, no bf16 screen)."""
    env = dict(os.environ, SPLADE_LMHEAD_CPU="full") if precision == "fp32-full" else None
    cmd = ["taskset", "-c", cores(threads), os.path.join(bindir, "bench_encode_ids"), model, ids_file,
           str(threads), str(batch), vec_out, precision.replace("-full", "")]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_ort(onnx_path, ids_file, threads, vec_out="-"):
    cmd = ["taskset", "-c", cores(threads), sys.executable, os.path.abspath(__file__), "--ort-worker",
           onnx_path, ids_file, str(threads), vec_out]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def ort_worker(onnx_path, ids_file, threads, vec_out):
    """One sequence per call (no padding); warm-up as bench_encode_ids (the first sequence until 1,024
    tokens went through); same JSON as bench_encode_ids."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(threads)
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    s = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    with open(ids_file, "rb") as f:
        (n,) = struct.unpack("<i", f.read(4))
        lens = struct.unpack("<%di" % n, f.read(4 * n))
        seqs = [np.frombuffer(f.read(4 * L), dtype="<i4").astype(np.int64)[None, :] for L in lens]
    feed = lambda x: {"input_ids": x, "attention_mask": np.ones_like(x)}
    warm = 0
    while warm < 1024:
        s.run(None, feed(seqs[0]))
        warm += seqs[0].shape[1]
    times, outs = [], []
    c0 = time.process_time()
    for x in seqs:
        t0 = time.perf_counter()
        y = s.run(None, feed(x))[0]
        times.append((time.perf_counter() - t0) * 1e3)
        outs.append(y[0])
    cpu = (time.process_time() - c0) * 1e3
    if vec_out != "-":
        np.save(vec_out, np.stack(outs))
    print(json.dumps({"times_ms": times, "cpu_ms": cpu, "seqs": n}))


def summarize(r, per_call):
    t = np.array(r["times_ms"])
    if per_call:  # queries: one per call
        return {"median_ms": float(np.median(t)), "p99_ms": float(np.percentile(t, 99)), "cpu_ms": r["cpu_ms"] / r["seqs"]}
    return {"docs_s": r["seqs"] / (t.sum() / 1e3), "cpu_ms_doc": r["cpu_ms"] / r["seqs"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ort-worker", nargs=4, metavar=("ONNX", "IDS", "THREADS", "OUT"))
    ap.add_argument("--models", nargs="+", default=["cache/splade-tiny", "cache/rand-bert-base"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--docs", type=int, default=8, help="documents per length for bert-base (x8 for tiny)")
    ap.add_argument("--precision", nargs="+", default=["fp32"], help="our precisions to time (ORT stays fp32)")
    ap.add_argument("--bindir", default=os.path.join(REPO, "build-nc", "bench"))
    ap.add_argument("--shared", default=os.path.join(REPO, "..", "shared"))
    ap.add_argument("--workloads", nargs="+", default=["query", "doc256", "doc512"])
    ap.add_argument("--baseline", help="another build's bench/ folder: its precisions are timed too, in the same "
                    "rotation (rows 'base PREC'), for before/after comparisons")
    ap.add_argument("--first-core", type=int, default=0, help="pin to cores FIRST.. (default 0)")
    a = ap.parse_args()
    global FIRST_CORE
    FIRST_CORE = a.first_core
    if a.ort_worker:
        return ort_worker(*a.ort_worker)
    cli = os.path.join(os.path.dirname(os.path.abspath(a.bindir)), "splade-index")
    tmp = os.path.join(REPO, "tmp", "cpu_peer")
    os.makedirs(tmp, exist_ok=True)
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print("# cpu_peer: cores from %d; %s, commit %s, %s" % (FIRST_CORE, time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), commit,
                                               open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": ")))
    for t in a.threads:
        r = subprocess.run(["taskset", "-c", cores(t), os.path.join(a.bindir, "bench_cpu_peak"), str(t)],
                           capture_output=True, text=True)
        try:
            PEAK[t] = json.loads(r.stdout)["fp32_avx512_fma"]
        except (ValueError, KeyError):
            pass
        print("peak %d thread(s): %s (GFLOP/s; int8 GOP/s) load %.2f" % (t, r.stdout.strip(), loadavg()))
    print("| model | workload | threads | engine | median ms | p99 ms | docs/s | CPU ms/seq | ours/ORT wall | ours/ORT CPU | GFLOP per CPU s | of fp32 peak | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model in a.models:
        name = os.path.basename(model.rstrip("/"))
        onnx_path = os.path.join(tmp, name + ".onnx")
        if not os.path.exists(onnx_path):
            subprocess.run([sys.executable, os.path.join(REPO, "tools", "export_onnx.py"), model, "-o", onnx_path],
                           check=True, capture_output=True)
        cfg = json.load(open(os.path.join(model, "config.json")))
        big = cfg["hidden_size"] >= 512
        nd = a.docs if big else a.docs * 8
        qs, docs = load_texts(a.shared, a.queries, nd)
        work = {"query": tokenize(cli, model, qs, 32), "doc256": tokenize(cli, model, docs, 256),
                "doc512": tokenize(cli, model, docs, 512)}
        for w in a.workloads:
            ids_file = os.path.join(tmp, "%s-%s.ids" % (name, w))
            write_ids(ids_file, work[w])
            flops = model_flops(cfg, work[w])
            # Numerics: every vector, ours (fp32) vs ORT, 1 thread.
            vo, vr = os.path.join(tmp, "ours.vec"), os.path.join(tmp, "ort.npy")
            run_ours(a.bindir, model, ids_file, 1, 1 if w == "query" else 8, vo)
            run_ort(onnx_path, ids_file, 1, vr)
            ours_v, ort_v = read_vectors(vo, len(work[w]), cfg["vocab_size"]), np.load(vr)
            diff = float(np.abs(ours_v - ort_v).max())
            nnz = float((ours_v > 0).sum(1).mean())
            print("numerics %s %s: max |ours - ORT| = %.2e over %d vectors (mean %.0f terms, mean %.0f tokens)"
                  % (name, w, diff, len(work[w]), nnz, np.mean([len(s) for s in work[w]])))
            for t in a.threads:
                rows = {}
                for rep in range(a.reps):
                    for prec in a.precision:
                        for tag, bindir in [("base", a.baseline)] * bool(a.baseline) + [("ours", a.bindir)]:
                            r = run_ours(bindir, model, ids_file, t, 1 if w == "query" else 8, precision=prec)
                            rows.setdefault(tag + " " + prec, []).append((r, loadavg()))
                    r = run_ort(onnx_path, ids_file, t)
                    rows.setdefault("ORT fp32", []).append((r, loadavg()))
                ort_s = [summarize(r, w == "query") for r, _ in rows["ORT fp32"]]
                for eng, lst in rows.items():
                    for i, (r, la) in enumerate(lst):
                        s = summarize(r, w == "query")
                        o = ort_s[i]
                        if w == "query":
                            cratio = o["cpu_ms"] / s["cpu_ms"]
                            ratio = o["median_ms"] / s["median_ms"]
                            gf = flops / len(work[w]) / (s["cpu_ms"] / 1e3) / 1e9
                            cols = "%.2f | %.2f | | %.2f" % (s["median_ms"], s["p99_ms"], s["cpu_ms"])
                        else:
                            ratio = s["docs_s"] / o["docs_s"]
                            cratio = o["cpu_ms_doc"] / s["cpu_ms_doc"]
                            gf = flops / len(work[w]) / (s["cpu_ms_doc"] / 1e3) / 1e9
                            cols = " | | %.2f | %.1f" % (s["docs_s"], s["cpu_ms_doc"])
                        peak = PEAK.get(1)  # per CPU second of one core: the rates are per CPU second too
                        print("| %s | %s | %d | %s (rep %d) | %s | %.2f | %.2f | %.0f | %s | %.2f |" % (
                            name, w, t, eng, i + 1, cols, ratio, cratio, gf, "%.0f%%" % (100 * gf / peak) if peak else "", la))
                        sys.stdout.flush()


PEAK = {}


def model_flops(cfg, seqs):
    """Multiply-adds x 2 of the whole forward (layers, attention, MLM transform, LM head)."""
    H, F, V, Lyr = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    tot = 0
    for s in seqs:
        L = len(s)
        tot += 2 * L * (Lyr * (4 * H * H + 2 * H * F) + H * H + H * V) + Lyr * 4 * L * L * H
    return tot


if __name__ == "__main__":
    main()
