/* topology: the hwloc topology as the extractors see it, from the system
 * (root "/") or from an XML file (--hwloc-xml, or ROOT/hwloc.xml in a
 * fixture root), and the NUMA locality hwloc gives I/O devices. */
#ifndef SYSMAP_TOPOLOGY_H
#define SYSMAP_TOPOLOGY_H

#include "extract.h"

#include <hwloc.h>

/* Loads the topology; io 1 keeps PCI and OS devices. who names the
 * extractor in err. */
int topo_load(const struct source *src, int io, const char *who, hwloc_topology_t *out,
              char *err, size_t errlen);

/* NUMA nodes of the OS devices hwloc knows (disks, network interfaces,
 * InfiniBand HCAs), by name. */
struct osdev_numa {
    size_t count;
    struct { char name[64]; int numa; } *dev;
};

/* Fills map; a topology that cannot be loaded gives an empty map (the
 * extractors then use sysfs alone; the cpu extractor reports the error). */
void osdev_numa_load(const struct source *src, struct osdev_numa *map);
void osdev_numa_free(struct osdev_numa *map);

/* The NUMA node hwloc gives device name, or -1 when it does not know it or
 * the device is local to several nodes. */
int osdev_numa_find(const struct osdev_numa *map, const char *name);

/* The numa_node field: hwloc's locality when it knows the device, else the
 * sysfs walk (src_numa_node) from sysfs_dir. */
void json_set_device_numa(json_t *o, const struct osdev_numa *map, const char *name,
                          const struct source *src, const char *sysfs_dir);

#endif
