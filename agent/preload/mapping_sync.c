/* mapping_sync: what a mapping's memory and its file exchange (mapping.c
 * keeps the table): a shared mapping's pristine copy and the write-back of
 * what this process changed, and the file's bytes read into pages a
 * mapping grew over. */
#include "preload.h"
#include "mapping_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

/* Runs of changed bytes closer than this are written as one; more runs
 * than RUNS_MAX in one write-back are written as one span. */
#define RUN_GAP 4096
#define RUNS_MAX 64

/* Gives m its pristine copy (it may be written from now on). */
int make_pristine(struct map *m)
{
    if (m->pristine || !m->shared)
        return 0;
    size_t len = m->end - m->start;
    char *copy = anon_alloc(len);
    if (!copy)
        return -ENOMEM;
    if (m->prot & PROT_READ) {
        memcpy(copy, (void *)m->start, m->data_end - m->start);
    } else {
        kernel_protect(m->start, m->data_end, m->prot | PROT_READ);
        memcpy(copy, (void *)m->start, m->data_end - m->start);
        kernel_protect(m->start, m->data_end, m->prot);
    }
    m->pristine = copy;
    m->pristine_len = len;
    return 0;
}

struct run {
    uintptr_t from, to;
};

/* The runs of bytes in [a, b) that differ from the pristine copy, gaps
 * under RUN_GAP joined. Returns how many (RUNS_MAX + 1: too many; runs[0]
 * then spans from the first change to the last). */
static int changed_runs(const struct map *m, uintptr_t a, uintptr_t b, struct run *runs)
{
    const char *pris = m->pristine;   /* pris[x - m->start]: the copy of byte x */
    const uintptr_t base = m->start;
    int n = 0;
    for (uintptr_t x = a; x < b;) {
        size_t block = b - x < RUN_GAP ? b - x : RUN_GAP;
        if (memcmp((const void *)x, pris + (x - base), block) == 0) {
            x += block;
            continue;
        }
        uintptr_t first = x, last = x + block;
        while (*(const char *)first == pris[first - base])
            first++;
        while (*(const char *)(last - 1) == pris[last - 1 - base])
            last--;
        if (n && first - runs[n - 1].to < RUN_GAP)
            runs[n - 1].to = last;
        else if (n <= RUNS_MAX)
            runs[n++] = (struct run){ first, last };
        else
            runs[RUNS_MAX].to = last;
        x += block;
    }
    if (n > RUNS_MAX)
        runs[0] = (struct run){ runs[0].from, runs[RUNS_MAX].to };
    return n;
}

/* Writes what this process changed in [a, b) of a shared mapping back to
 * its file, up to the file's present size (a file another process
 * truncated is not grown again). Called with lock held. 0 or -errno. */
int write_back(struct map *m, uintptr_t a, uintptr_t b)
{
    if (!m->pristine)
        return 0;
    if (a < m->start)
        a = m->start;
    if (b > m->data_end)
        b = m->data_end;
    if (a >= b)
        return 0;
    int lfd;
    adafs *fs = route_enter_fd(ROUTE_WRITE, m->lfd, &lfd);
    if (!fs)
        return -EIO;
    struct stat st;
    int rc = adafs_fstat(fs, lfd, &st);
    uintptr_t file_end = rc == 0 && st.st_size > m->off
                       ? m->start + (uintptr_t)(st.st_size - m->off) : m->start;
    if (b > file_end)
        b = file_end;
    /* The pages may have lost PROT_READ (mprotect); they are read here. */
    bool unreadable = rc == 0 && a < b && !(m->prot & PROT_READ);
    if (unreadable && kernel_protect(a, b, m->prot | PROT_READ) < 0)
        rc = -errno;
    struct run runs[RUNS_MAX + 1];
    int nruns = rc == 0 && a < b ? changed_runs(m, a, b, runs) : 0;
    if (nruns > RUNS_MAX)
        nruns = 1;
    for (int i = 0; rc == 0 && i < nruns; i++) {
        off_t at = m->off + (off_t)(runs[i].from - m->start);
        size_t len = runs[i].to - runs[i].from;
        for (size_t done = 0; rc == 0 && done < len;) {
            ssize_t w = adafs_pwrite(fs, lfd, (const char *)runs[i].from + done, len - done,
                                     at + (off_t)done);
            if (w <= 0)
                rc = w < 0 ? (int)w : -EIO;
            else
                done += (size_t)w;
        }
        if (rc == 0)
            memcpy(m->pristine + (runs[i].from - m->start), (const void *)runs[i].from, len);
    }
    if (unreadable)
        kernel_protect(a, b, m->prot);
    route_leave_raw(0);
    return rc;
}

/* Reads the file's bytes behind [from, to) of m into it (writable now);
 * a file shorter than that leaves the rest as it was (zeros). 0 or -errno. */
int read_file_into(const struct map *m, uintptr_t from, uintptr_t to)
{
    int lfd;
    adafs *fs = route_enter_fd(ROUTE_READ, m->lfd, &lfd);
    if (!fs)
        return -EIO;
    int rc = 0;
    for (uintptr_t x = from; x < to;) {
        ssize_t n = adafs_pread(fs, lfd, (void *)x, to - x, m->off + (off_t)(x - m->start));
        if (n < 0)
            rc = (int)n;
        if (n <= 0)
            break;
        x += (size_t)n;
    }
    route_leave_raw(0);
    return rc;
}

/* Reads the file's bytes into [m->data_end, upto) of a grown mapping, whose
 * whole pages there were past the file's end (SIGBUS) until now. */
int fill_grown(struct map *m, uintptr_t upto)
{
    uintptr_t from = m->data_end, first_new = round_up(from);
    int rc = replace_pages(first_new, round_up(upto), PROT_READ | PROT_WRITE, m->shared, false);
    if (rc == 0 && from < first_new && !(m->prot & PROT_WRITE))
        kernel_protect(from, from + 1, PROT_READ | PROT_WRITE);
    if (rc == 0)
        rc = read_file_into(m, from, upto);
    kernel_protect(from, round_up(upto), m->prot);
    if (rc == 0 && m->pristine)
        memcpy(m->pristine + (from - m->start), (void *)from, upto - from);
    if (rc == 0)
        m->data_end = upto;
    return rc;
}
