# awk -f bench/fuse/ratios.awk RESULTS: options.sh's "rR TARGET METRIC VALUE"
# lines to one line per metric: the interposer's median, and each variant's
# median ratio to the interposer of the same repeat (min-max), in percent.
{ v[$1, $2, $3] = $4; target[$2] = 1; metric[$3] = 1; repeat[$1] = 1 }
function median(a, n,   i, j, x) {
    for (i = 1; i <= n; i++)
        for (j = i + 1; j <= n; j++)
            if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
    for (m in metric) {
        n = 0
        for (r in repeat) p[++n] = v[r, "preload", m]
        line = sprintf("%s | preload %.0f", m, median(p, n))
        for (t in target) {
            if (t == "preload") continue
            n = 0
            for (r in repeat) if (v[r, "preload", m] > 0) q[++n] = 100 * v[r, t, m] / v[r, "preload", m]
            lo = q[1]; hi = q[1]
            for (i = 2; i <= n; i++) { if (q[i] < lo) lo = q[i]; if (q[i] > hi) hi = q[i] }
            line = line sprintf(" | %s %.0f%% (%.0f-%.0f)", t, median(q, n), lo, hi)
        }
        print line
    }
}
