import struct, sys
def read(p):
    d = open(p, 'rb').read(); o = 0; out = []
    while o < len(d):
        n = struct.unpack_from('<i', d, o)[0]; o += 4
        t = struct.unpack_from('<%di' % n, d, o); o += 4 * n
        w = struct.unpack_from('<%df' % n, d, o); o += 4 * n
        out.append(dict(zip(t, w)))
    return out
a, b = read(sys.argv[1]), read(sys.argv[2])
assert len(a) == len(b)
mx = 0.0; mxw = 0.0; diffterms = 0
for x, y in zip(a, b):
    for k in set(x) | set(y):
        d = abs(x.get(k, 0.0) - y.get(k, 0.0)); mx = max(mx, d)
        if (k in x) != (k in y): diffterms += 1
    mxw = max(mxw, max(x.values(), default=0))
print("vectors %d  max|diff| %.3g  max weight %.3g  terms present in one only %d" % (len(a), mx, mxw, diffterms))
