#!/usr/bin/env python3
"""Encodes a corpus (JSONL or Parquet) across a Ray cluster into vector shards for splade-index.

    python3 examples/ray_encode.py corpus.jsonl vectors/ --actors 2 [--address auto] [--device cpu|cuda]
    cat vectors/part-*.jsonl | splade-index build --vectors - -o my.idx     # or: build part-000000, add the rest

Each actor loads the model once and encodes whole 256-record chunks of the corpus (plan_chunks), so the
shards, concatenated in name order, are exactly what `splade-index encode --input corpus.jsonl` prints
with the same encoder options. --address: an existing cluster (default: start a local one with
--cpus CPUs). The output folder must be shared by the cluster's nodes."""
import argparse
import glob
import os
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("corpus")
    p.add_argument("out_dir")
    p.add_argument("--actors", type=int, default=2)
    p.add_argument("--cpus-per-actor", type=int, default=1)
    p.add_argument("--gpus-per-actor", type=float, default=0)
    p.add_argument("--address", default=None)
    p.add_argument("--cpus", type=int, default=None, help="CPUs of a local cluster")
    p.add_argument("--model", default=None)
    p.add_argument("--device", default="cpu")
    p.add_argument("--max-length", type=int, default=256)
    a = p.parse_args()

    import ray
    from splade_index.integrations.ray import EncodeChunks, plan_chunks

    ray.init(address=a.address, num_cpus=None if a.address else a.cpus, include_dashboard=False,
             log_to_driver=False)
    t0 = time.time()
    plan = plan_chunks(a.corpus)
    for f in glob.glob(os.path.join(a.out_dir, "part-*.jsonl")):  # a rerun must not keep stale shards
        os.remove(f)
    done = ray.data.from_items(plan).map_batches(
        EncodeChunks, batch_size=1, concurrency=a.actors, num_cpus=a.cpus_per_actor, num_gpus=a.gpus_per_actor,
        fn_constructor_kwargs={"out_dir": os.path.abspath(a.out_dir), "model": a.model, "device": a.device,
                               "threads": a.cpus_per_actor, "max_length": a.max_length})
    rows = list(done.iter_rows())
    n = sum(int(r["n"]) for r in rows)
    dt = time.time() - t0
    actor_cpu = {}  # each actor's CPU seconds at its last chunk (model loading included)
    for r in rows:
        actor_cpu[int(r["pid"])] = max(actor_cpu.get(int(r["pid"]), 0.0), float(r["cpu_s"]))
    print(f"ray_encode: {n} documents in {len(plan)} shards, {dt:.1f} s ({n / dt:.1f} docs/s); "
          f"{len(actor_cpu)} actors, {sum(actor_cpu.values()):.1f} CPU s in them", file=sys.stderr)
    ray.shutdown()


if __name__ == "__main__":
    main()
