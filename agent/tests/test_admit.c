/* Unit tests of admit: what the agent does when unauthenticated
 * connections crowd it (which connection is evicted, which never is). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "admit.h"
#include "tap.h"

static struct sockaddr_in from(const char *ip, int port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    inet_pton(AF_INET, ip, &sa.sin_addr);
    return sa;
}

struct conn {
    int mine, peer;   /* the agent's end, the client's */
    int slot;
};

static struct admit_outcome connect_from(const char *ip, int port, struct conn *c)
{
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    c->mine = sv[0];
    c->peer = sv[1];
    struct sockaddr_in sa = from(ip, port);
    struct admit_outcome o;
    admit_new(c->mine, (struct sockaddr *)&sa, sizeof(sa), &o);
    c->slot = o.slot;
    return o;
}

/* Was the agent's end shut down (the client sees end of stream)? */
static bool evicted(const struct conn *c)
{
    struct pollfd p = { .fd = c->peer, .events = POLLIN };
    char b;
    return poll(&p, 1, 0) == 1 && read(c->peer, &b, 1) == 0;
}

static void end(struct conn *c)
{
    admit_done(c->slot);
    close(c->mine);
    close(c->peer);
}

int main(void)
{
    struct conn a[ADMIT_PER_ADDRESS + 1], hello, other[ADMIT_UNPROVEN];
    for (int i = 0; i < ADMIT_PER_ADDRESS; i++)
        connect_from("10.0.0.9", 1000 + i, &a[i]);
    tap_ok(!evicted(&a[0]), "%d idle connections from one address are all kept", ADMIT_PER_ADDRESS);
    struct admit_outcome o = connect_from("10.0.0.9", 2000, &a[ADMIT_PER_ADDRESS]);
    tap_ok(o.slot >= 0 && o.evicted && strcmp(o.victim, "10.0.0.9:1000") == 0 && evicted(&a[0]),
           "one more from it evicts its oldest idle one (%s)", o.victim);
    tap_ok(!evicted(&a[1]), "and only that one");
    admit_done(a[0].slot);   /* its thread ends */

    /* One whose hello is being checked is never evicted. */
    tap_ok(admit_hello(a[1].slot), "a connection whose hello arrived is taken on");
    o = connect_from("10.0.0.9", 2001, &hello);
    tap_ok(o.evicted && strcmp(o.victim, "10.0.0.9:1002") == 0 && !evicted(&a[1]),
           "the next evicts the oldest idle one, not it (%s)", o.victim);
    tap_ok(!admit_hello(a[2].slot), "an evicted connection's hello, arriving late, is not taken on");
    admit_done(a[2].slot);

    /* Another address fills the agent: the address with the most loses. */
    struct conn lone;
    connect_from("10.0.0.1", 3000, &lone);
    int from_b = ADMIT_UNPROVEN - ADMIT_PER_ADDRESS - 1;
    int i;
    for (i = 0; i < from_b && i < ADMIT_PER_ADDRESS; i++)
        connect_from("10.0.0.2", 4000 + i, &other[i]);
    for (int k = 3; k < 10; k++)   /* spread the rest over more addresses */
        for (int j = 0; j < ADMIT_PER_ADDRESS && i < from_b; j++, i++) {
            char ip[32];
            snprintf(ip, sizeof(ip), "10.0.0.%d", k);
            connect_from(ip, 5000 + i, &other[i]);
        }
    struct conn next;
    o = connect_from("10.0.0.1", 3001, &next);
    tap_ok(o.slot >= 0 && o.evicted && !evicted(&lone),
           "at %d unproven, a newcomer evicts from the busiest address (%s), not the lone one",
           ADMIT_UNPROVEN, o.victim);

    /* Proven sessions are bounded and never evicted. */
    tap_ok(admit_hello(lone.slot) && admit_proven(lone.slot), "a peer that proved itself is proven");
    struct conn x;
    o = connect_from("10.0.0.1", 3002, &x);
    tap_ok(!evicted(&lone), "and never evicted");
    tap_ok(!admit_proven(next.slot), "a slot whose hello did not arrive cannot be proven");
    end(&lone);
    end(&next);
    end(&x);
    end(&hello);
    return tap_done();
}
