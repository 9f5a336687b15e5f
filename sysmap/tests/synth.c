#include "synth.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#define GIB (1024LL * 1024 * 1024)

long long synth_local_bytes(size_t profile)
{
    return (long long)(profile + 1) * 100 * GIB;
}

static json_t *cpu(size_t p)
{
    int packages = 1 + (int)(p % 2), cores = packages * (8 + 4 * (int)(p % 5));
    char model[64];
    snprintf(model, sizeof(model), "Synthetic CPU model %zu", p);
    json_t *numa = json_array();
    for (int n = 0; n < packages; n++)
        json_array_append_new(numa, json_pack("{sisIsssi}", "os_index", n, "memory_bytes",
                                              (json_int_t)(64 + 32 * (p % 4)) * GIB, "cpus",
                                              n ? "16-31" : "0-15", "pus", cores * 2 / packages));
    return json_pack("{sssssisisisIsos[{sisssIsi}{sisssIsi}]}", "model", model,
                     "architecture", "x86_64", "packages", packages, "cores", cores,
                     "pus", cores * 2, "memory_bytes", (json_int_t)(packages * (64 + 32 * (p % 4))) * GIB,
                     "numa_nodes", numa, "caches",
                     "level", 2, "type", "unified", "size_bytes", (json_int_t)1 << 20, "count", cores,
                     "level", 3, "type", "unified", "size_bytes", (json_int_t)(32 << 20), "count", packages);
}

static json_t *block(size_t p)
{
    return json_pack("{s[{sssssIsbsssi}{sssssIsbsssi}]}", "devices",
                     "name", "nvme0n1", "model", "Synthetic NVMe", "size_bytes",
                     (json_int_t)((p + 1) * 128) * GIB, "rotational", 0, "scheduler", "none",
                     "numa_node", (int)(p % 2),
                     "name", "sda", "model", "Synthetic HDD", "size_bytes", (json_int_t)2000 * GIB,
                     "rotational", 1, "scheduler", "mq-deadline", "numa_node", 0);
}

static json_t *storage(size_t p)
{
    return json_pack("{s[{sssssssssssbsIsI}{sssssssssssbsIsI}{sssssssssnsbsIsI}]}", "mounts",
                     "mountpoint", "/", "source", "/dev/sda1", "fstype", "ext4", "kind", "local",
                     "device", "sda", "read_only", 0, "size_bytes", (json_int_t)1900 * GIB,
                     "available_bytes", (json_int_t)(1000 + p) * GIB,
                     "mountpoint", "/local", "source", "/dev/nvme0n1p1", "fstype", "xfs",
                     "kind", "local", "device", "nvme0n1", "read_only", 0,
                     "size_bytes", (json_int_t)((p + 1) * 128) * GIB,
                     "available_bytes", (json_int_t)synth_local_bytes(p),
                     "mountpoint", "/lustre", "source", "10.0.0.1@o2ib:/fs", "fstype", "lustre",
                     "kind", "remote", "device", "read_only", 0,
                     "size_bytes", (json_int_t)1 << 50, "available_bytes", (json_int_t)1 << 49);
}

static json_t *pci(size_t p)
{
    json_t *devs = json_array();
    for (int i = 0; i < 24; i++) {
        char addr[32], dev[16];
        snprintf(addr, sizeof(addr), "0000:%02x:00.0", i);
        snprintf(dev, sizeof(dev), "0x%04zx", 0x1000 + p * 32 + (size_t)i);
        json_array_append_new(devs, json_pack("{sssssssssi}", "address", addr, "class", "0x020000",
                                              "vendor", "0x15b3", "device", dev, "numa_node", i % 2));
    }
    return json_pack("{so}", "devices", devs);
}

static json_t *net(size_t p)
{
    return json_pack("{s[{sssssisssnsn}{sssssisssisi}{sssssisssisi}]}", "interfaces",
                     "name", "lo", "type", "loopback", "mtu", 65536, "operstate", "unknown",
                     "speed_mbps", "numa_node",
                     "name", "eth0", "type", "ether", "mtu", 1500, "operstate", "up",
                     "speed_mbps", 25000, "numa_node", 0,
                     "name", "ib0", "type", "infiniband", "mtu", 4092 + (int)p, "operstate", "up",
                     "speed_mbps", 100000, "numa_node", (int)((p + 1) % 2));
}

static json_t *ib(size_t p)
{
    char guid[32];
    snprintf(guid, sizeof(guid), "0x%016zx", 0x0002c90300000000 + p);
    return json_pack("{s[{sssssis[{sisssssi}]}]}", "hcas", "name", "mlx5_0", "node_guid", guid,
                     "numa_node", (int)((p + 1) % 2), "ports", "port", 1, "state", "ACTIVE",
                     "rate", "100 Gb/sec (4X EDR)", "lid", (int)p + 1);
}

static json_t *kernel(size_t p)
{
    char release[32];
    snprintf(release, sizeof(release), "6.1.0-%zu-amd64", p);
    json_t *mods = json_array();
    for (int i = 0; i < 80; i++) {
        char name[32];
        snprintf(name, sizeof(name), "module_%03d", i);
        json_array_append_new(mods, json_string(name));
    }
    return json_pack("{ssssso}", "release", release, "version", "#1 SMP Debian", "modules", mods);
}

char *synth_report(const char *host, size_t profile)
{
    json_t *r = json_pack("{sssis{sososososososo}}", "host", host, "time", 1700000000,
                          "extractors", "cpu", cpu(profile), "block", block(profile),
                          "storage", storage(profile), "pci", pci(profile), "net", net(profile),
                          "ib", ib(profile), "kernel", kernel(profile));
    char *text = r ? json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(r);
    return text;
}
