#include "topology.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* hwloc's Linux backend finds PCI devices, disks, network interfaces and
 * HCAs, and their NUMA nodes, in sysfs: all the extractors use. The plugins
 * compute nodes often have (libhwloc-plugins) would add device names from
 * libpciaccess, which keeps a pci.ids cache it never frees (LeakSanitizer
 * reports it once hwloc unloads the plugin), and GPU objects whose
 * discovery initialises vendor runtimes (CUDA, OpenCL) in a cron job. A
 * name this hwloc does not know is refused, which is fine. */
static const char *const unused_components[] = {
    "pci", "opencl", "gl", "cuda", "nvml", "rsmi", "levelzero",
};

int topo_load(const struct source *src, int io, const char *who, hwloc_topology_t *out,
              char *err, size_t errlen)
{
    char xml[PATH_MAX];
    const char *xml_path = src->hwloc_xml;
    if (!xml_path && strcmp(src->root, "/") != 0) {
        src_path(src, xml, sizeof(xml), "/hwloc.xml");
        xml_path = xml;
    }
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) < 0) {
        snprintf(err, errlen, "%s: hwloc_topology_init: %s", who, strerror(errno));
        return -errno;
    }
    if (io) {
        hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
        for (size_t i = 0; i < sizeof(unused_components) / sizeof(unused_components[0]); i++)
            (void)hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
                                                unused_components[i]);
    }
    if (xml_path && hwloc_topology_set_xml(topo, xml_path) < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot use hwloc XML topology %s: %s", who, xml_path,
                 strerror(e));
        hwloc_topology_destroy(topo);
        return -e;
    }
    if (hwloc_topology_load(topo) < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot load the hwloc topology%s%s: %s", who,
                 xml_path ? " from " : "", xml_path ? xml_path : "", strerror(e));
        hwloc_topology_destroy(topo);
        return -e;
    }
    *out = topo;
    return 0;
}

void osdev_numa_load(const struct source *src, struct osdev_numa *map)
{
    memset(map, 0, sizeof(*map));
    hwloc_topology_t topo;
    char err[512];
    if (topo_load(src, 1, "osdev", &topo, err, sizeof(err)) < 0)
        return;
    size_t cap = 0;
    for (hwloc_obj_t dev = NULL; (dev = hwloc_get_next_osdev(topo, dev));) {
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, dev);
        if (!anc || !anc->nodeset || !dev->name)
            continue;
        if (map->count == cap) {
            cap = cap ? cap * 2 : 16;
            void *grown = realloc(map->dev, cap * sizeof(*map->dev));
            if (!grown)
                break;
            map->dev = grown;
        }
        snprintf(map->dev[map->count].name, sizeof(map->dev[0].name), "%s", dev->name);
        map->dev[map->count].numa = hwloc_bitmap_weight(anc->nodeset) == 1
                                    ? hwloc_bitmap_first(anc->nodeset) : -1;
        map->count++;
    }
    hwloc_topology_destroy(topo);
}

void osdev_numa_free(struct osdev_numa *map)
{
    free(map->dev);
    memset(map, 0, sizeof(*map));
}

int osdev_numa_find(const struct osdev_numa *map, const char *name)
{
    for (size_t i = 0; i < map->count; i++)
        if (strcmp(map->dev[i].name, name) == 0)
            return map->dev[i].numa;
    return -1;
}

void json_set_device_numa(json_t *o, const struct osdev_numa *map, const char *name,
                          const struct source *src, const char *sysfs_dir)
{
    int numa = osdev_numa_find(map, name);
    if (numa < 0)
        numa = src_numa_node(src, sysfs_dir);
    json_object_set_new(o, "numa_node", numa >= 0 ? json_integer(numa) : json_null());
}
