#!/usr/bin/env python3
"""Places the REAL tokenizer and query-table files of the OpenSearch sparse models into cache/real/
(git-ignored), taken from public GitHub repositories, since huggingface.co cannot be reached from the
development machines. Every file is checked against the sha256 recorded below; data/README.md says
where each comes from and why it is the model's own file.

  python3 tools/fetch_real_tokenizers.py --ml-commons GITDIR --tuning-sample GITDIR

GITDIR: a clone (or bare git directory) of the repository, e.g. the snapshot a session's `fetch` tool
brings (github:opensearch-project/ml-commons, github:zhichao-aws/opensearch-sparse-model-tuning-sample).
Without them the script says what is missing and exits 1; the tests that need these files skip.

Output:
  cache/real/bert-uncased/{tokenizer.json,idf.json}   doc-v2/v3-distill query tokenizer + idf.json
  cache/real/mbert-uncased/{tokenizer.json,idf.json}  opensearch-neural-sparse-encoding-multilingual-v1
  cache/real/docv3-idf.json                           the tuning sample's idf.json (same bytes as above)
"""
import argparse
import hashlib
import io
import os
import subprocess
import sys
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIRROR = "/work/.mirror"

ML_COMMONS_COMMIT = "088c1a528b9403e07b46cf11a8ffd6cb8d01d4ee"  # "Add BERT Tokenizer as OpenSearch built-in analyzer"
TUNING_COMMIT = "75bfa0e9fc5d414acae4c8ada331e209ecc17aaa"       # "init repo" (idf.json unchanged since)
ZIPS = {
    "bert-uncased": ("ml-algorithms/src/main/resources/analysis/bert-uncased.zip", {
        "tokenizer.json": "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
        "idf.json": "da23a1c0b9252776cc8c6d70fd14723e218f484d489cd9027ac6e4065d5b9edd"}),
    "mbert-uncased": ("ml-algorithms/src/main/resources/analysis/mbert-uncased.zip", {
        "tokenizer.json": "4610565401a93ba7a0a5f738f25fd9d9b3fcc03ba11b586cf52d073a478edb64",
        "idf.json": "3ca24a68b7a0f8a4917e32ad718f686ff01ed2d9c259a0ba4388d78b794436bd"}),
}
TUNING_IDF = ("idf.json", "da23a1c0b9252776cc8c6d70fd14723e218f484d489cd9027ac6e4065d5b9edd")


def git_show(gitdir, commit, path):
    d = os.path.join(gitdir, ".git") if os.path.isdir(os.path.join(gitdir, ".git")) else gitdir
    return subprocess.run(["git", "--git-dir", d, "show", "%s:%s" % (commit, path)], check=True,
                          capture_output=True).stdout


def place(path, data, sha):
    got = hashlib.sha256(data).hexdigest()
    if got != sha:
        sys.exit("fetch_real_tokenizers: %s has sha256 %s, expected %s" % (path, got, sha))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)
    print("%s: %d bytes, sha256 ok" % (path, len(data)))


def default(name):
    d = os.path.join(MIRROR, name, "repo")
    return d if os.path.isdir(d) else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ml-commons", default=default("opensearch-project+ml-commons"))
    ap.add_argument("--tuning-sample", default=default("zhichao-aws+opensearch-sparse-model-tuning-sample"))
    ap.add_argument("--out", default=os.path.join(REPO, "cache", "real"))
    a = ap.parse_args()
    if not a.ml_commons:
        sys.exit("fetch_real_tokenizers: pass --ml-commons GITDIR (github:opensearch-project/ml-commons)")
    for name, (zpath, files) in ZIPS.items():
        z = zipfile.ZipFile(io.BytesIO(git_show(a.ml_commons, ML_COMMONS_COMMIT, zpath)))
        for member, sha in files.items():
            place(os.path.join(a.out, name, member), z.read(member), sha)
    if a.tuning_sample:
        place(os.path.join(a.out, "docv3-idf.json"), git_show(a.tuning_sample, TUNING_COMMIT, TUNING_IDF[0]),
              TUNING_IDF[1])
    else:
        print("--tuning-sample not given: cache/real/docv3-idf.json not written (bert-uncased/idf.json is the same file)")


if __name__ == "__main__":
    main()
