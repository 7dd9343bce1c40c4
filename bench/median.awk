# The median of a space-separated list of numbers (insertion sort: the lists are a few rounds long).
# Shared by the start-up scripts: awk "$(cat bench/median.awk) PROGRAM" (mawk has no -f plus -e).
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
