/* block: the node's block devices from /sys/block; NUMA locality from
 * hwloc's OS devices, or from sysfs for disks hwloc does not list. */
#include "topology.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* "none [mq-deadline] kyber" -> "mq-deadline"; a single word stays as is. */
static void active_scheduler(char *text)
{
    char *open = strchr(text, '['), *close = open ? strchr(open, ']') : NULL;
    if (open && close) {
        memmove(text, open + 1, (size_t)(close - open - 1));
        text[close - open - 1] = '\0';
    }
}

/* How the disk is attached, from its name (the kernel's naming is stable). */
static const char *transport(const char *name)
{
    static const struct { const char *prefix, *kind; } kinds[] = {
        { "nvme", "nvme" }, { "sd", "scsi" }, { "vd", "virtio" }, { "xvd", "xen" },
        { "mmcblk", "mmc" }, { "loop", "loop" }, { "zram", "zram" }, { "ram", "ram" },
        { "dm-", "device-mapper" }, { "md", "md" }, { "nbd", "nbd" }, { "rbd", "rbd" },
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strncmp(name, kinds[i].prefix, strlen(kinds[i].prefix)) == 0)
            return kinds[i].kind;
    return "other";
}

json_t *extract_block(const struct source *src, char *err, size_t errlen)
{
    char **names = src_list_for(src, "block", "/sys/block", 0, err, errlen);
    if (!names)
        return NULL;
    struct osdev_numa numa;
    osdev_numa_load(src, &numa);
    json_t *devices = json_array();
    for (size_t i = 0; names[i]; i++) {
        const char *n = names[i];
        long long sectors, rotational, removable;
        /* No size: not a disk. Size 0: an unused loop or zram device. */
        if (src_read_ll(src, &sectors, "/sys/block/%s/size", n) != 0 || sectors == 0)
            continue;
        json_t *d = json_object();
        json_set_str(d, "name", n);
        json_set_str(d, "transport", transport(n));
        json_set_file_str(d, "model", src, "/sys/block/%s/device/model", n);
        json_set_file_str(d, "vendor", src, "/sys/block/%s/device/vendor", n);
        /* The size file counts 512-byte sectors whatever the device's own
         * block size is. */
        json_object_set_new(d, "size_bytes", json_integer(sectors * 512));
        json_object_set_new(d, "rotational",
                            src_read_ll(src, &rotational, "/sys/block/%s/queue/rotational", n) == 0
                            ? json_boolean(rotational) : json_null());
        json_object_set_new(d, "removable",
                            src_read_ll(src, &removable, "/sys/block/%s/removable", n) == 0
                            ? json_boolean(removable) : json_null());
        char sched[256];
        if (src_read(src, sched, sizeof(sched), "/sys/block/%s/queue/scheduler", n) >= 0) {
            active_scheduler(sched);
            json_set_str(d, "scheduler", sched);
        } else {
            json_set_str(d, "scheduler", NULL);
        }
        json_set_file_int(d, "logical_block_size", src, "/sys/block/%s/queue/logical_block_size", n);
        char dir[300];
        snprintf(dir, sizeof(dir), "/sys/block/%s", n);
        json_set_device_numa(d, &numa, n, src, dir);
        json_array_append_new(devices, d);
    }
    names_free(names);
    osdev_numa_free(&numa);
    return json_pack("{so}", "devices", devices);
}
