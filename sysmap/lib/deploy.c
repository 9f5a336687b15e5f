/* deploy: choosing where a burst buffer lives on a node, from the values of
 * the storage, block, net and ib extractors.
 *
 * The choice: a mounted file system that is local (on a block device of this
 * node), writable, on a non-rotational device, and not one the node's own
 * operating system lives on; among those the one with the most available
 * bytes (f_bavail: what an unprivileged server may actually write). */
#include "db.h"

#include <stdio.h>
#include <string.h>

/* The burst buffer must not fill the file systems the node needs to run. */
static const char *const system_mounts[] = { "/", "/boot", "/boot/efi", "/usr", "/var", "/etc" };

static int is_system_mount(const char *path)
{
    for (size_t i = 0; i < sizeof(system_mounts) / sizeof(system_mounts[0]); i++)
        if (strcmp(path, system_mounts[i]) == 0)
            return 1;
    return 0;
}

static json_t *find_device(json_t *block, const char *name)
{
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(block, "devices"), i, d)
        if (json_is_string(json_object_get(d, "name")) &&
            strcmp(json_string_value(json_object_get(d, "name")), name) == 0)
            return d;
    return NULL;
}

static int int_or(json_t *v, int fallback)
{
    return json_is_integer(v) ? (int)json_integer_value(v) : fallback;
}

static void choose_storage(json_t *storage, json_t *block, struct sysmap_deploy_view *view)
{
    size_t i;
    json_t *m;
    json_int_t best = -1;
    json_array_foreach(json_object_get(storage, "mounts"), i, m) {
        const char *path = json_string_value(json_object_get(m, "mountpoint"));
        const char *kind = json_string_value(json_object_get(m, "kind"));
        const char *dev = json_string_value(json_object_get(m, "device"));
        json_t *avail = json_object_get(m, "available_bytes");
        if (!path || !kind || !dev || strcmp(kind, "local") != 0 || !json_is_integer(avail) ||
            json_is_true(json_object_get(m, "read_only")) || is_system_mount(path))
            continue;
        json_t *d = find_device(block, dev);
        if (!d || !json_is_false(json_object_get(d, "rotational")))
            continue;
        if (json_integer_value(avail) <= best)
            continue;
        best = json_integer_value(avail);
        view->has_storage = 1;
        snprintf(view->storage_path, sizeof(view->storage_path), "%s", path);
        snprintf(view->device, sizeof(view->device), "%s", dev);
        snprintf(view->fstype, sizeof(view->fstype), "%s",
                 json_string_value(json_object_get(m, "fstype")) ?: "");
        view->available_bytes = (uint64_t)best;
        view->size_bytes = (uint64_t)json_integer_value(json_object_get(m, "size_bytes"));
        view->storage_numa_node = int_or(json_object_get(d, "numa_node"), -1);
    }
}

/* The fabric adapter: an InfiniBand HCA with an active port, else the
 * fastest running interface of a physical device (speed unknown counts as
 * 0, NUMA node unknown is reported as -1). */
static void choose_network(json_t *net, json_t *ib, struct sysmap_deploy_view *view)
{
    size_t i, j;
    json_t *hca, *port, *iface;
    json_array_foreach(json_object_get(ib, "hcas"), i, hca) {
        json_array_foreach(json_object_get(hca, "ports"), j, port) {
            const char *state = json_string_value(json_object_get(port, "state"));
            if (state && strstr(state, "ACTIVE")) {
                snprintf(view->network_adapter, sizeof(view->network_adapter), "%s",
                         json_string_value(json_object_get(hca, "name")) ?: "");
                view->network_numa_node = int_or(json_object_get(hca, "numa_node"), -1);
                return;
            }
        }
    }
    json_int_t best = -1;
    json_array_foreach(json_object_get(net, "interfaces"), i, iface) {
        const char *type = json_string_value(json_object_get(iface, "type"));
        const char *state = json_string_value(json_object_get(iface, "operstate"));
        int numa = int_or(json_object_get(iface, "numa_node"), -1);
        json_t *speed = json_object_get(iface, "speed_mbps");
        json_int_t mbps = json_is_integer(speed) ? json_integer_value(speed) : 0;
        if (!type || !state || strcmp(type, "loopback") == 0 || strcmp(state, "up") != 0 ||
            !json_is_string(json_object_get(iface, "device")) || mbps <= best)
            continue;
        best = mbps;
        snprintf(view->network_adapter, sizeof(view->network_adapter), "%s",
                 json_string_value(json_object_get(iface, "name")) ?: "");
        view->network_numa_node = numa;
    }
}

void deploy_compute(json_t *storage, json_t *block, json_t *net, json_t *ib,
                    struct sysmap_deploy_view *view)
{
    view->storage_numa_node = -1;
    view->network_numa_node = -1;
    choose_storage(storage, block, view);
    choose_network(net, ib, view);
}
