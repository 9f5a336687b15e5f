/* net: network interfaces from /sys/class/net; NUMA locality from hwloc's
 * OS devices, or from sysfs for interfaces hwloc does not list. */
#include "topology.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ARPHRD_* numbers of include/uapi/linux/if_arp.h that nodes have. */
static const char *link_type(long long type)
{
    switch (type) {
    case 1:   return "ether";
    case 32:  return "infiniband";
    case 772: return "loopback";
    case 768: return "tunnel";
    case 776: return "sit";
    case 65534: return "none";
    default:  return "other";
    }
}

json_t *extract_net(const struct source *src, char *err, size_t errlen)
{
    char **names = src_list_for(src, "net", "/sys/class/net", 0, err, errlen);
    if (!names)
        return NULL;
    struct osdev_numa numa;
    osdev_numa_load(src, &numa);
    json_t *ifaces = json_array();
    for (size_t i = 0; names[i]; i++) {
        const char *n = names[i];
        long long type, speed;
        json_t *d = json_object();
        json_set_str(d, "name", n);
        json_set_str(d, "type", src_read_ll(src, &type, "/sys/class/net/%s/type", n) == 0
                                ? link_type(type) : NULL);
        json_set_file_str(d, "address", src, "/sys/class/net/%s/address", n);
        json_set_file_int(d, "mtu", src, "/sys/class/net/%s/mtu", n);
        json_set_file_str(d, "operstate", src, "/sys/class/net/%s/operstate", n);
        /* Reading speed fails (EINVAL) or gives -1 on links that are down
         * or virtual: unknown, not zero. */
        json_object_set_new(d, "speed_mbps",
                            src_read_ll(src, &speed, "/sys/class/net/%s/speed", n) == 0 && speed > 0
                            ? json_integer(speed) : json_null());
        char dir[300], path[PATH_MAX], real[PATH_MAX];
        snprintf(dir, sizeof(dir), "/sys/class/net/%s/device", n);
        json_set_device_numa(d, &numa, n, src, dir);
        const char *dev = NULL;
        if (src_path(src, path, sizeof(path), "/sys/class/net/%s/device", n) == 0 &&
            realpath(path, real))
            dev = strrchr(real, '/') + 1;
        json_set_str(d, "device", dev);
        json_array_append_new(ifaces, d);
    }
    names_free(names);
    osdev_numa_free(&numa);
    return json_pack("{so}", "interfaces", ifaces);
}
