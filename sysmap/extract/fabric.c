/* fabric: the InfiniBand fabric topology from libibnetdisc, discovered from
 * this node's HCA or read from an `ibnetdiscover --cache` file. Run on one
 * node (discovery sends MADs across the whole fabric), not by default. */
#include "config.h"
#include "extract.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_IBNETDISC
#include <infiniband/ibnetdisc.h>

static const char *node_type(int type)
{
    switch (type) {
    case IB_NODE_CA:     return "ca";
    case IB_NODE_SWITCH: return "switch";
    case IB_NODE_ROUTER: return "router";
    default:             return "other";
    }
}

static json_t *node_json(ibnd_node_t *node)
{
    char guid[32];
    snprintf(guid, sizeof(guid), "0x%016llx", (unsigned long long)node->guid);
    json_t *o = json_object();
    json_set_str(o, "guid", guid);
    json_set_str(o, "type", node_type(node->type));
    json_set_str(o, "description", node->nodedesc);
    json_object_set_new(o, "ports", json_integer(node->numports));
    json_t *links = json_array();
    for (int p = 0; node->ports && p <= node->numports; p++) {
        ibnd_port_t *port = node->ports[p];
        if (!port || !port->remoteport)
            continue;
        char rguid[32];
        snprintf(rguid, sizeof(rguid), "0x%016llx", (unsigned long long)port->remoteport->node->guid);
        json_array_append_new(links, json_pack("{sisIsssi}", "port", p, "lid",
                                               (json_int_t)port->base_lid, "remote_guid", rguid,
                                               "remote_port", port->remoteport->portnum));
    }
    json_object_set_new(o, "links", links);
    return o;
}

static int guid_cmp(const void *a, const void *b)
{
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "guid")),
                  json_string_value(json_object_get(*(json_t *const *)b, "guid")));
}

json_t *extract_fabric(const struct source *src, char *err, size_t errlen)
{
    ibnd_fabric_t *fabric;
    if (src->ib_cache) {
        if (!(fabric = ibnd_load_fabric(src->ib_cache, 0))) {
            snprintf(err, errlen, "fabric: cannot load the ibnetdiscover cache %s", src->ib_cache);
            return NULL;
        }
    } else {
        /* Discovery talks to the real HCA, so only with root "/". */
        char path[4096];
        src_path(src, path, sizeof(path), "/sys/class/infiniband");
        int absent = access(path, F_OK) != 0;
        if (absent || strcmp(src->root, "/") != 0) {
            snprintf(err, errlen, "fabric: no InfiniBand HCA to discover from (%s: %s);"
                     " give --ib-cache FILE to read a recorded fabric", path,
                     absent ? strerror(errno) : "fixture root");
            return NULL;
        }
        struct ibnd_config config = { 0 };
        if (!(fabric = ibnd_discover_fabric(NULL, 0, NULL, &config))) {
            snprintf(err, errlen, "fabric: ibnd_discover_fabric failed (is ib_umad loaded"
                     " and /dev/infiniband/umad* readable?)");
            return NULL;
        }
    }
    size_t n = 0, switches = 0, cas = 0;
    for (ibnd_node_t *node = fabric->nodes; node; node = node->next)
        n++;
    json_t **items = calloc(n ? n : 1, sizeof(*items));
    if (!items) {
        ibnd_destroy_fabric(fabric);
        snprintf(err, errlen, "fabric: out of memory for %zu nodes", n);
        return NULL;
    }
    size_t i = 0;
    for (ibnd_node_t *node = fabric->nodes; node; node = node->next, i++) {
        items[i] = node_json(node);
        switches += node->type == IB_NODE_SWITCH;
        cas += node->type == IB_NODE_CA;
    }
    ibnd_destroy_fabric(fabric);
    /* Discovery order depends on where it started: sorted, the same fabric
     * seen from two nodes is the same value. */
    qsort(items, n, sizeof(*items), guid_cmp);
    json_t *nodes = json_array();
    for (i = 0; i < n; i++)
        json_array_append_new(nodes, items[i]);
    free(items);
    return json_pack("{sIsIso}", "switches", (json_int_t)switches, "cas", (json_int_t)cas,
                     "nodes", nodes);
}

#else

json_t *extract_fabric(const struct source *src, char *err, size_t errlen)
{
    snprintf(err, errlen, "fabric: this sysmap was built without libibnetdisc"
             " (install libibnetdisc-dev and reconfigure)");
    return NULL;
}

#endif
