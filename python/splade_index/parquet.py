"""Parquet writer for `splade-index export --format parquet` (and its columns JSONL).

    splade-index export --format columns --input corpus.jsonl | python3 -m splade_index.parquet out.parquet

Reads {"id", "term_ids", "weights"} lines from standard input (or --input FILE) and writes a Parquet
file with columns id (string), term_ids (list<int32>), weights (list<float32>), in row groups of
--row-group rows. Written with pyarrow: Debian packages no Arrow/Parquet C library (apt-cache search
parquet: none), so the CLI pipes its columns here rather than linking one."""
import argparse
import json
import sys

SCHEMA_FIELDS = (("id", "string"), ("term_ids", "list<int32>"), ("weights", "list<float32>"))


def schema():
    import pyarrow as pa
    return pa.schema([("id", pa.string()), ("term_ids", pa.list_(pa.int32())), ("weights", pa.list_(pa.float32()))])


def write(lines, path, row_group=65536):
    """Writes the columns records of `lines` (an iterable of JSON strings) to path; returns the row count."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    sch = schema()
    n = 0
    cols = ([], [], [])
    with pq.ParquetWriter(path, sch, compression="zstd") as w:
        def flush():
            if cols[0]:
                w.write_table(pa.table(list(cols), schema=sch))
                for c in cols:
                    c.clear()
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                rid, ids, ws = r["id"], r["term_ids"], r["weights"]
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"line {lineno}: not a columns record ({e})") from None
            if not isinstance(rid, str) or len(ids) != len(ws):
                raise ValueError(f"line {lineno}: id must be a string and term_ids/weights of one length")
            cols[0].append(rid)
            cols[1].append(ids)
            cols[2].append(ws)
            n += 1
            if len(cols[0]) >= row_group:
                flush()
        flush()
    return n


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m splade_index.parquet", description=__doc__.split("\n")[0])
    p.add_argument("output")
    p.add_argument("--input", default="-")
    p.add_argument("--row-group", type=int, default=65536)
    a = p.parse_args(argv)
    try:
        f = sys.stdin if a.input == "-" else open(a.input, encoding="utf-8")
        with f:
            write(f, a.output, a.row_group)
    except ImportError:
        print("splade_index.parquet: pyarrow is needed (pip install pyarrow)", file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:
        print(f"splade_index.parquet: {a.input}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
