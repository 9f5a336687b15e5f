/* mdcpu: what a metadata operation costs the servers, per phase.
 *
 *   mdcpu DIR PROCS FILES PID...
 *
 * PROCS processes (each with its own connections, kept across the phases)
 * create FILES empty files each in DIR/pN, stat them, remove them; plain
 * POSIX calls, so it runs under any build's LD_PRELOAD interposer (it
 * links nothing of adafs: an older build's library is not mixed with this
 * one's). Per phase it prints the rate and the CPU the servers PID...
 * used (utime + stime of the whole process, threads that ended
 * included), per operation:
 *   create 34202 ops/s server_us_per_op 29.00
 * The CPU is counted in clock ticks: give FILES * PROCS >= 20000 for half
 * a microsecond's resolution. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The servers' CPU so far, in ns. */
static double servers_ns(char **pids, int n)
{
    double sum = 0;
    long tck = sysconf(_SC_CLK_TCK);
    for (int i = 0; i < n; i++) {
        char path[64], buf[2048];
        snprintf(path, sizeof(path), "/proc/%.20s/stat", pids[i]);
        FILE *f = fopen(path, "r");
        size_t got = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
            fclose(f);
        buf[got] = '\0';
        const char *q = strrchr(buf, ')');   /* the name may hold spaces */
        unsigned long long ut, st;
        if (!q || sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                         &st) != 2) {
            fprintf(stderr, "mdcpu: cannot read %s\n", path);
            exit(1);
        }
        sum += (double)(ut + st) * 1e9 / (double)tck;
    }
    return sum;
}

static void child(const char *dir, int p, int files, int go, int done)
{
    char d[4096], f[4200];
    snprintf(d, sizeof(d), "%s/p%d", dir, p);
    if (mkdir(d, 0755) < 0 && errno != EEXIST) {
        perror(d);
        _exit(1);
    }
    for (int phase = 0; phase < 3; phase++) {
        char c;
        if (read(go, &c, 1) != 1)
            _exit(1);
        for (int i = 0; i < files; i++) {
            snprintf(f, sizeof(f), "%s/f%d", d, i);
            struct stat st;
            int rc = phase == 0 ? close(open(f, O_CREAT | O_WRONLY | O_EXCL, 0644))
                     : phase == 1 ? stat(f, &st) : unlink(f);
            if (rc < 0) {
                perror(f);
                _exit(1);
            }
        }
        if (write(done, "d", 1) != 1)
            _exit(1);
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc < 5 || atoi(argv[2]) < 1 || atoi(argv[2]) > 64 || atoi(argv[3]) < 0) {
        fprintf(stderr, "usage: mdcpu DIR PROCS(1-64) FILES SERVER_PID...\n");
        return 2;
    }
    const char *dir = argv[1];
    int procs = atoi(argv[2]), files = atoi(argv[3]), npids = argc - 4;
    char **pids = argv + 4;
    int go[64][2], done[2];
    if (pipe(done) < 0)
        return perror("pipe"), 1;
    for (int p = 0; p < procs; p++) {
        if (pipe(go[p]) < 0)
            return perror("pipe"), 1;
        pid_t pid = fork();
        if (pid < 0)
            return perror("fork"), 1;
        if (pid == 0)
            child(dir, p, files, go[p][0], done[1]);
    }
    usleep(300000);   /* the children's directories made, connections up */
    static const char *names[] = { "create", "stat", "remove" };
    for (int phase = 0; phase < 3; phase++) {
        double s0 = servers_ns(pids, npids), t0 = now();
        for (int p = 0; p < procs; p++)
            if (write(go[p][1], "g", 1) != 1)
                return perror("pipe"), 1;
        for (int p = 0; p < procs; p++) {
            char c;
            if (read(done[0], &c, 1) != 1) {
                fprintf(stderr, "mdcpu: a process failed\n");
                return 1;
            }
        }
        double t = now() - t0, s = servers_ns(pids, npids) - s0;
        double ops = (double)procs * files;
        printf("%s %.0f ops/s server_us_per_op %.2f\n", names[phase], ops / t,
               ops > 0 ? s / 1e3 / ops : 0.0);
    }
    int status, failed = 0;
    while (wait(&status) > 0)
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    return failed;
}
