"""Replays auto's rule (src/query/choose.c) over measured per-query thread-CPU times: for each
collection NAME, FEATURES_DIR/f-NAME.txt (bench/query/query_features.c) and RUN_DIR/run1-NAME/
{wtaat,taat,bmp}.{1,2,3}.lat (bench/query/auto_check.sh, 3 rounds); prints the replayed
median / p99 / mean and the ratio to the best single method.
  python3 bench/query/replay_auto.py DIR NAME [NAME...]"""
import statistics as st
import sys

METHODS = ["wtaat", "taat", "bmp"]


def rule(f):
    nt, post, docs, rho, long_share, peak, gain, wgain = f[:8]
    if docs <= 8192:
        return "taat"
    if wgain >= 1.19 and peak >= 0.06 and gain < 1.3:
        return "bmp"
    return "taat" if docs <= 131072 and rho >= docs / 8192 else "wtaat"


def stats(v):
    v = sorted(v)
    return v[len(v) // 2], v[int(len(v) * 0.99)], sum(v) / len(v)


d = sys.argv[1]
for c in sys.argv[2:]:
    f = [list(map(float, line.split())) for line in open(f"{d}/f-{c}.txt")]
    t = {}
    for m in METHODS:
        rounds = [[float(line.split()[1]) for line in open(f"{d}/run1-{c}/{m}.{r}.lat")] for r in (1, 2, 3)]
        t[m] = [st.median(x) for x in zip(*rounds)]
    s = stats([t[rule(fi)][i] for i, fi in enumerate(f)])
    best = [min(stats(t[m])[j] for m in METHODS) for j in range(3)]
    print(f"{c}: to bmp {sum(rule(fi) == 'bmp' for fi in f)}/{len(f)}, replay median / p99 / mean "
          f"{s[0]:.0f} / {s[1]:.0f} / {s[2]:.0f} µs, vs the best method "
          + " / ".join(f"{100 * (s[j] / best[j] - 1):+.1f}%" for j in range(3)))
