#!/usr/bin/env python3
"""Hugging Face tokenizers (Rust, one thread) on SciFact, the baseline of bench/bench_tokenizer.c.

Same texts as the C benchmark (documents as title + " " + text, then queries), no truncation, no
padding. Both encode_batch and encode in a loop are timed; the faster counts. With --c-bench it
also runs the C benchmark, alternating the two --rounds times, and with --write-md it writes
bench/results/tokenizer-<date>.md (device, date, commit, command, table, ratio).

usage: python3 bench/tokenizer_hf.py [--shared ../shared] [--repeat 3] [--rounds 3]
                                     [--c-bench build/bench/bench_tokenizer] [--write-md]
"""
import os

os.environ["TOKENIZERS_PARALLELISM"] = "false"  # before the import: one Rust thread
os.environ["RAYON_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import tokenizers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402


def load_texts(shared):
    out = []
    with open(os.path.join(shared, "data/scifact/corpus.jsonl"), encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            title = d.get("title") or ""
            out.append(title + " " + d["text"] if title else d["text"])
    with open(os.path.join(shared, "data/scifact/queries.jsonl"), encoding="utf-8") as f:
        out.extend(json.loads(line)["text"] for line in f)
    return out


def time_hf(tok, texts, repeat):
    """Best seconds of encode_batch and of an encode loop, and the ids produced."""
    best = {"encode_batch": 1e30, "encode loop": 1e30}
    tokens = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        enc = tok.encode_batch(texts)
        best["encode_batch"] = min(best["encode_batch"], time.perf_counter() - t0)
        tokens = sum(len(e.ids) for e in enc)
        t0 = time.perf_counter()
        for t in texts:
            tok.encode(t)
        best["encode loop"] = min(best["encode loop"], time.perf_counter() - t0)
    return best, tokens


def run_c(binary, shared, repeat):
    out = subprocess.run([binary, "--json", "--repeat", str(repeat),
                          "--vocab", os.path.join(shared, "data/bert-base-uncased/vocab.txt"),
                          "--corpus", os.path.join(shared, "data/scifact")],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def git_commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_md(path, rows, c_best, hf_best, hf_mode, nbytes, tokens, command):
    mb = nbytes / 1e6
    ratio = hf_best / c_best
    with open(path, "w") as f:
        f.write("# Tokenizer throughput: splade-index vs Hugging Face tokenizers\n\n")
        f.write("- device: %s, %d cores visible (shared with other jobs: load average %s)\n"
                % (cpu_model(), os.cpu_count(), " ".join("%.2f" % x for x in os.getloadavg())))
        f.write("- date: %s\n- commit: %s\n" % (datetime.date.today().isoformat(), git_commit()))
        f.write("- command: `%s`\n" % command)
        f.write("- data: SciFact, %d texts (5,183 docs as title + \" \" + text, 1,109 queries), "
                "%.2f MB of UTF-8, %d ids; no truncation, no padding; one thread each "
                "(TOKENIZERS_PARALLELISM=false, RAYON_NUM_THREADS=1)\n"
                % (rows[0]["texts"], mb, tokens))
        f.write("- HF: tokenizers %s from bert-base-uncased tokenizer.json; faster of encode_batch "
                "and an encode loop (%s won)\n" % (tokenizers.__version__, hf_mode))
        f.write("- each round: best of the passes inside it; the table's best is over the rounds\n\n")
        f.write("| round | splade-index s | HF s | ratio |\n|---|---|---|---|\n")
        for i, r in enumerate(rows):
            f.write("| %d | %.4f | %.4f | %.2fx |\n" % (i + 1, r["c"], r["hf"], r["hf"] / r["c"]))
        f.write("\n| implementation | best s | tokens/s | MB/s |\n|---|---|---|---|\n")
        f.write("| splade-index (C) | %.4f | %.3g | %.1f |\n" % (c_best, tokens / c_best, mb / c_best))
        f.write("| HF tokenizers (Rust) | %.4f | %.3g | %.1f |\n" % (hf_best, tokens / hf_best, mb / hf_best))
        f.write("\n**Speed-up: %.2fx** (HF best time / splade-index best time, same run)\n" % ratio)
    return ratio


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--repeat", type=int, default=3, help="passes per round and implementation")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--c-bench", help="path of bench_tokenizer, to run it alternately")
    ap.add_argument("--write-md", action="store_true")
    a = ap.parse_args()
    tok = Tokenizer.from_file(os.path.join(a.shared, "data/bert-base-uncased/tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    texts = load_texts(a.shared)
    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    rows, hf_modes = [], {}
    for _ in range(a.rounds):
        best, tokens = time_hf(tok, texts, a.repeat)
        mode = min(best, key=best.get)
        hf_modes[mode] = hf_modes.get(mode, 0) + 1
        row = {"hf": best[mode], "texts": len(texts)}
        print("HF %-12s %.4f s  %.3g tokens/s  %.1f MB/s" % (mode, best[mode], tokens / best[mode],
                                                             nbytes / 1e6 / best[mode]))
        if a.c_bench:
            c = run_c(a.c_bench, a.shared, a.repeat)
            if c["tokens"] != tokens or c["bytes"] != nbytes:
                sys.exit("C and HF disagree on the work: %s vs %d ids, %d bytes" % (c, tokens, nbytes))
            row["c"] = c["seconds"]
            print("C  %-12s %.4f s  %.3g tokens/s  %.1f MB/s  ratio %.2fx" %
                  ("", c["seconds"], c["tokens_per_s"], c["mb_per_s"], best[mode] / c["seconds"]))
        rows.append(row)
    if a.c_bench and a.write_md:
        c_best, hf_best = min(r["c"] for r in rows), min(r["hf"] for r in rows)
        path = "bench/results/tokenizer-%s.md" % datetime.date.today().isoformat()
        ratio = write_md(path, rows, c_best, hf_best, max(hf_modes, key=hf_modes.get), nbytes,
                         tokens, "python3 " + " ".join(sys.argv))
        print("wrote %s: speed-up %.2fx" % (path, ratio))


if __name__ == "__main__":
    main()
