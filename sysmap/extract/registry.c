/* registry: the extractors by name, in the order `sysmap -l` lists them. */
#include "extract.h"

#include <string.h>

const struct extractor extractors[] = {
    { "cpu", "packages, cores, PUs, NUMA nodes with memory, caches (hwloc)", 1, extract_cpu },
    { "block", "block devices: model, size, rotational, scheduler, NUMA node", 1, extract_block },
    { "storage", "mounted file systems: type, local/remote, size, available bytes", 1,
      extract_storage },
    { "pci", "PCI devices: class, vendor, device, NUMA node", 1, extract_pci },
    { "net", "network interfaces: type, speed, state, NUMA node", 1, extract_net },
    { "ib", "InfiniBand HCA ports: state, rate, LID (sysfs)", 1, extract_ib },
    { "fabric", "InfiniBand fabric topology (libibnetdisc; run on one node)", 0, extract_fabric },
    { "kernel", "kernel release, version and loaded modules", 1, extract_kernel },
    { NULL, NULL, 0, NULL },
};

const struct extractor *extractor_find(const char *name)
{
    for (const struct extractor *e = extractors; e->name; e++)
        if (strcmp(e->name, name) == 0)
            return e;
    return NULL;
}
