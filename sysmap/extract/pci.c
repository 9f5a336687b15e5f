/* pci: the node's PCI devices from /sys/bus/pci/devices. */
#include "extract.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

json_t *extract_pci(const struct source *src, char *err, size_t errlen)
{
    char **names = src_list(src, "/sys/bus/pci/devices");
    if (!names) {
        if (errno == ENOENT)        /* a machine without PCI (some VMs) */
            return json_pack("{s[]}", "devices");
        snprintf(err, errlen, "pci: cannot list %s/sys/bus/pci/devices: %s",
                 strcmp(src->root, "/") ? src->root : "", strerror(errno));
        return NULL;
    }
    json_t *devices = json_array();
    for (size_t i = 0; names[i]; i++) {
        const char *n = names[i];
        json_t *d = json_object();
        json_set_str(d, "address", n);
        json_set_file_str(d, "class", src, "/sys/bus/pci/devices/%s/class", n);
        json_set_file_str(d, "vendor", src, "/sys/bus/pci/devices/%s/vendor", n);
        json_set_file_str(d, "device", src, "/sys/bus/pci/devices/%s/device", n);
        char dir[300];
        snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", n);
        int numa = src_numa_node(src, dir);
        json_object_set_new(d, "numa_node", numa >= 0 ? json_integer(numa) : json_null());
        json_array_append_new(devices, d);
    }
    names_free(names);
    return json_pack("{so}", "devices", devices);
}
