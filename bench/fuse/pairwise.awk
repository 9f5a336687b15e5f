# awk -v a=NAME -v b=NAME -f bench/fuse/pairwise.awk RESULTS: for readpairs.sh
# (or options.sh) "rR TARGET METRIC VALUE" lines, per metric: b's median
# ratio to a of the same repeat (min-max), and in how many repeats b was
# faster.
{ v[$1, $2, $3] = $4; metric[$3] = 1; repeat[$1] = 1 }
END {
    for (m in metric) {
        n = 0; wins = 0
        for (r in repeat) if (v[r, a, m] > 0 && (r, b, m) in v) {
            q[++n] = 100 * v[r, b, m] / v[r, a, m]
            if (v[r, b, m] > v[r, a, m]) wins++
        }
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (q[j] < q[i]) { x = q[i]; q[i] = q[j]; q[j] = x }
        med = n % 2 ? q[(n + 1) / 2] : (q[n / 2] + q[n / 2 + 1]) / 2
        printf "%s | %s / %s %.0f%% (%.0f-%.0f), %s faster in %d of %d\n", m, b, a, med, q[1], q[n], b, wins, n
    }
}
