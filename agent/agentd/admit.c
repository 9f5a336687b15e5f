#include "admit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum slot_state { FREE, IDLE, HELLO, EVICTED, PROVEN };

struct slot {
    enum slot_state state;
    int fd;
    uint8_t addr[16];    /* IPv4 as IPv4-mapped IPv6 */
    uint64_t age;        /* order of admission: smaller is older */
    char name[64];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot slots[ADMIT_SLOTS];
static uint64_t admitted;

static void address_of(const struct sockaddr *sa, socklen_t len, uint8_t out[16])
{
    memset(out, 0, 16);
    if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    }
}

void admit_peer_name(const struct sockaddr *sa, socklen_t len, char *out, size_t outlen)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
    }
    snprintf(out, outlen, "%s:%d", host, port);
}

static bool unproven(const struct slot *s)
{
    return s->state == IDLE || s->state == HELLO;
}

static int count_from(const uint8_t addr[16])
{
    int n = 0;
    for (int i = 0; i < ADMIT_SLOTS; i++)
        n += unproven(&slots[i]) && memcmp(slots[i].addr, addr, 16) == 0;
    return n;
}

/* The oldest idle slot, of addr only unless it is NULL; -1 if none. */
static int oldest_idle(const uint8_t *addr)
{
    int best = -1;
    for (int i = 0; i < ADMIT_SLOTS; i++)
        if (slots[i].state == IDLE && (!addr || memcmp(slots[i].addr, addr, 16) == 0) &&
            (best < 0 || slots[i].age < slots[best].age))
            best = i;
    return best;
}

/* The address holding the most unproven connections. */
static const uint8_t *busiest(void)
{
    const uint8_t *best = NULL;
    int most = 0;
    for (int i = 0; i < ADMIT_SLOTS; i++) {
        if (!unproven(&slots[i]))
            continue;
        int n = count_from(slots[i].addr);
        if (n > most) {
            most = n;
            best = slots[i].addr;
        }
    }
    return best;
}

void admit_new(int fd, const struct sockaddr *addr, socklen_t len, struct admit_outcome *out)
{
    uint8_t a[16];
    address_of(addr, len, a);
    *out = (struct admit_outcome){ .slot = -1 };
    pthread_mutex_lock(&lock);
    int total = 0;
    for (int i = 0; i < ADMIT_SLOTS; i++)
        total += unproven(&slots[i]);
    int mine = count_from(a);
    int victim = -1;
    bool need = false;
    if (mine >= ADMIT_PER_ADDRESS) {
        need = true;
        victim = oldest_idle(a);
    } else if (total >= ADMIT_UNPROVEN) {
        need = true;
        const uint8_t *crowd = busiest();
        victim = crowd ? oldest_idle(crowd) : -1;
        if (victim < 0)
            victim = oldest_idle(NULL);
    }
    int free_slot = -1;
    for (int i = 0; i < ADMIT_SLOTS && free_slot < 0; i++)
        if (slots[i].state == FREE)
            free_slot = i;
    if ((!need || victim >= 0) && free_slot >= 0) {
        if (victim >= 0) {
            /* Its thread's read returns at once and it ends the slot. */
            shutdown(slots[victim].fd, SHUT_RDWR);
            slots[victim].state = EVICTED;
            out->evicted = true;
            snprintf(out->victim, sizeof(out->victim), "%s", slots[victim].name);
            total--;
            if (memcmp(slots[victim].addr, a, 16) == 0)
                mine--;
        }
        struct slot *s = &slots[free_slot];
        s->state = IDLE;
        s->fd = fd;
        memcpy(s->addr, a, 16);
        s->age = ++admitted;
        admit_peer_name(addr, len, s->name, sizeof(s->name));
        out->slot = free_slot;
        total++;
        mine++;
    }
    out->unproven = total;
    out->from_address = mine;
    pthread_mutex_unlock(&lock);
}

bool admit_hello(int slot)
{
    pthread_mutex_lock(&lock);
    bool alive = slots[slot].state == IDLE;
    if (alive)
        slots[slot].state = HELLO;
    pthread_mutex_unlock(&lock);
    return alive;
}

bool admit_proven(int slot)
{
    pthread_mutex_lock(&lock);
    int proven = 0;
    for (int i = 0; i < ADMIT_SLOTS; i++)
        proven += slots[i].state == PROVEN;
    bool ok = proven < ADMIT_PROVEN && slots[slot].state == HELLO;
    if (ok)
        slots[slot].state = PROVEN;
    pthread_mutex_unlock(&lock);
    return ok;
}

void admit_done(int slot)
{
    pthread_mutex_lock(&lock);
    slots[slot].state = FREE;
    slots[slot].fd = -1;
    pthread_mutex_unlock(&lock);
}
