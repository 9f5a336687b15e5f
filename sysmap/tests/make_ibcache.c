/* make_ibcache: writes a small InfiniBand fabric in libibnetdisc's own cache
 * format (what `ibnetdiscover --cache FILE` records), for testing the
 * fabric extractor on machines without an HCA.
 *
 * The fabric is built in memory with libibnetdisc's public structures and
 * written by the library itself (ibnd_cache_fabric), so the file format is
 * exactly the library's, not a reimplementation of it. The writer walks the
 * node list and the port table, fields the header marks "internal use
 * only"; this program fills them as discovery would. Topology: one
 * 36-port switch "spine" linked to two leaf switches, each leaf with two
 * HCAs (node01..node04), i.e. 3 switches and 4 CAs with 6 links.
 *
 * usage: make_ibcache FILE */
#include <infiniband/ibnetdisc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ibnd_node_t *add_node(ibnd_fabric_t *f, uint64_t guid, int type, int nports,
                             const char *desc)
{
    ibnd_node_t *n = calloc(1, sizeof(*n));
    n->guid = guid;
    n->type = type;
    n->numports = nports;
    snprintf(n->nodedesc, sizeof(n->nodedesc), "%s", desc);
    n->ports = calloc((size_t)nports + 1, sizeof(*n->ports));
    /* NodeInfo as the SMA would answer it, for the fields the cache keeps. */
    mad_set_field(n->info, 0, IB_NODE_TYPE_F, (uint32_t)type);
    mad_set_field(n->info, 0, IB_NODE_NPORTS_F, (uint32_t)nports);
    mad_set_field64(n->info, 0, IB_NODE_GUID_F, guid);
    mad_set_field64(n->info, 0, IB_NODE_PORT_GUID_F, guid);
    mad_set_field64(n->info, 0, IB_NODE_SYSTEM_GUID_F, guid);
    n->next = f->nodes;
    f->nodes = n;
    return n;
}

static ibnd_port_t **port_table;

static ibnd_port_t *port_of(ibnd_node_t *n, int num, uint16_t lid)
{
    if (!n->ports[num]) {
        ibnd_port_t *p = calloc(1, sizeof(*p));
        p->guid = n->guid;
        p->portnum = num;
        p->node = n;
        p->base_lid = lid;
        mad_set_field(p->info, 0, IB_PORT_LID_F, lid);
        mad_set_field(p->info, 0, IB_PORT_STATE_F, 4);          /* ACTIVE */
        mad_set_field(p->info, 0, IB_PORT_LINK_WIDTH_ACTIVE_F, 2); /* 4X */
        n->ports[num] = p;
        /* ibnd_cache_fabric writes the ports it finds in the fabric's port
         * table (a hash chained through htnext); which bucket does not
         * matter for writing, and the loader rebuilds the table itself. */
        p->htnext = port_table[0];
        port_table[0] = p;
    }
    return n->ports[num];
}

static void link_ports(ibnd_node_t *a, int pa, uint16_t la, ibnd_node_t *b, int pb, uint16_t lb)
{
    ibnd_port_t *x = port_of(a, pa, la), *y = port_of(b, pb, lb);
    x->remoteport = y;
    y->remoteport = x;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_ibcache FILE\n");
        return 2;
    }
    ibnd_fabric_t *f = calloc(1, sizeof(*f));
    port_table = f->portstbl;
    ibnd_node_t *spine = add_node(f, 0x0002c90300a00001ULL, IB_NODE_SWITCH, 36, "spine");
    ibnd_node_t *leaf[2], *ca[4];
    for (int i = 0; i < 2; i++) {
        char desc[32];
        snprintf(desc, sizeof(desc), "leaf%d", i + 1);
        leaf[i] = add_node(f, 0x0002c90300b00001ULL + (uint64_t)i, IB_NODE_SWITCH, 36, desc);
        port_of(leaf[i], 0, (uint16_t)(2 + i));      /* switch management port 0 */
    }
    port_of(spine, 0, 1);
    for (int i = 0; i < 4; i++) {
        char desc[32];
        snprintf(desc, sizeof(desc), "node%02d mlx5_0", i + 1);
        ca[i] = add_node(f, 0x0c42a103005e0001ULL + (uint64_t)i, IB_NODE_CA, 1, desc);
    }
    link_ports(spine, 1, 1, leaf[0], 35, 2);
    link_ports(spine, 2, 1, leaf[1], 35, 3);
    for (int i = 0; i < 4; i++)
        link_ports(leaf[i / 2], 1 + i % 2, (uint16_t)(2 + i / 2), ca[i], 1, (uint16_t)(10 + i));
    f->from_node = ca[0];
    f->from_portnum = 1;
    if (ibnd_cache_fabric(f, argv[1], 0) != 0) {
        fprintf(stderr, "make_ibcache: ibnd_cache_fabric(%s) failed\n", argv[1]);
        return 1;
    }
    return 0;    /* the hand-built fabric is not freed: ibnd_destroy_fabric
                    expects the library's own allocations */
}
