/* pci: the node's PCI devices from /sys/bus/pci/devices. */
#include "extract.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

json_t *extract_pci(const struct source *src, char *err, size_t errlen)
{
    /* Some VMs have no PCI bus at all: an empty list. */
    char **names = src_list_for(src, "pci", "/sys/bus/pci/devices", 1, err, errlen);
    if (!names)
        return NULL;
    json_t *devices = json_array();
    for (size_t i = 0; names[i]; i++) {
        const char *n = names[i];
        json_t *d = json_object();
        json_set_str(d, "address", n);
        json_set_file_str(d, "class", src, "/sys/bus/pci/devices/%s/class", n);
        json_set_file_str(d, "vendor", src, "/sys/bus/pci/devices/%s/vendor", n);
        json_set_file_str(d, "device", src, "/sys/bus/pci/devices/%s/device", n);
        json_set_numa(d, src, "/sys/bus/pci/devices/%s", n);
        json_array_append_new(devices, d);
    }
    names_free(names);
    return json_pack("{so}", "devices", devices);
}
