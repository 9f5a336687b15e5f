/* lock_watch: holds of slurmctld's job lock counted from several threads,
 * each new longest one told to the caller (which logs it), the figures
 * copied for bbstat. */
#include "lock_watch.h"
#include "tap.h"

#include <string.h>
#include <unistd.h>

static struct lock_watch w = LOCK_WATCH_INIT;

/* Each thread notes 1000 holds of 1 us. */
static void *note_many(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++)
        lock_watch_note(&w, "many", 1);
    return NULL;
}

int main(void)
{
    uint64_t t0 = lock_watch_now_us();
    tap_ok(lock_watch_now_us() >= t0, "the clock does not go back");
    struct bb_lock_stats s = lock_watch_stats(&w);
    tap_ok(s.holds == 0 && s.max_us == 0 && !s.max_where, "nothing held yet");
    tap_ok(lock_watch_note(&w, "begin", 40), "the first hold is the longest yet");
    tap_ok(!lock_watch_note(&w, "cancel", 30), "a shorter one is not");
    tap_ok(!lock_watch_note(&w, "cancel", 40), "nor one as long");
    tap_ok(lock_watch_note(&w, "apply", 41), "a longer one is");
    s = lock_watch_stats(&w);
    tap_ok(s.holds == 4 && s.total_us == 151 && s.max_us == 41 && strcmp(s.max_where, "apply") == 0,
           "the figures: 4 holds, 151 us, the longest 41 us in apply");

    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, note_many, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    s = lock_watch_stats(&w);
    tap_ok(s.holds == 4004 && s.total_us == 4151 && s.max_us == 41,
           "4 threads' 4000 holds all counted (%llu holds)", (unsigned long long)s.holds);

    /* A hold's CPU time against its wall time: sleeping costs none. */
    uint64_t cpu0 = lock_watch_cpu_us(), wall0 = lock_watch_now_us();
    usleep(20000);
    uint64_t slept_cpu = lock_watch_cpu_us() - cpu0, slept_wall = lock_watch_now_us() - wall0;
    tap_ok(slept_wall >= 20000 && slept_cpu < 10000, "20 ms asleep: %llu us of wall time, "
           "%llu us on CPU", (unsigned long long)slept_wall, (unsigned long long)slept_cpu);
    cpu0 = lock_watch_cpu_us();
    for (volatile uint64_t x = 0; lock_watch_cpu_us() - cpu0 < 5000; x++)
        ;
    tap_ok(lock_watch_cpu_us() - cpu0 >= 5000, "work is counted on CPU");
    return tap_done();
}
