/* cpu: packages, cores, PUs, NUMA nodes with their local memory, and caches,
 * from hwloc (topology.c: the system, or an XML file in a fixture root,
 * since hwloc's own sysfs reader wants far more of /sys than a fixture tree
 * should carry). */
#include "topology.h"

#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { hwloc_obj_type_t type; int level; const char *kind; } cache_types[] = {
    { HWLOC_OBJ_L1CACHE, 1, "data" }, { HWLOC_OBJ_L1ICACHE, 1, "instruction" },
    { HWLOC_OBJ_L2CACHE, 2, "unified" }, { HWLOC_OBJ_L3CACHE, 3, "unified" },
    { HWLOC_OBJ_L4CACHE, 4, "unified" },
};

static json_t *caches_json(hwloc_topology_t topo)
{
    json_t *caches = json_array();
    for (size_t i = 0; i < sizeof(cache_types) / sizeof(cache_types[0]); i++) {
        int n = hwloc_get_nbobjs_by_type(topo, cache_types[i].type);
        hwloc_obj_t c = hwloc_get_obj_by_type(topo, cache_types[i].type, 0);
        if (n <= 0 || !c)
            continue;
        json_array_append_new(caches, json_pack("{sisssIsi}", "level", cache_types[i].level,
                                                "type", cache_types[i].kind,
                                                "size_bytes", (json_int_t)c->attr->cache.size,
                                                "count", n));
    }
    return caches;
}

static json_t *numa_json(hwloc_topology_t topo)
{
    json_t *nodes = json_array();
    hwloc_obj_t node = NULL;
    while ((node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node))) {
        char *cpus = NULL;
        hwloc_bitmap_list_asprintf(&cpus, node->cpuset);
        json_t *o = json_pack("{sIsI}", "os_index", (json_int_t)node->os_index,
                              "memory_bytes", (json_int_t)node->attr->numanode.local_memory);
        json_set_str(o, "cpus", cpus);
        json_object_set_new(o, "pus", json_integer(
            hwloc_get_nbobjs_inside_cpuset_by_type(topo, node->cpuset, HWLOC_OBJ_PU)));
        free(cpus);
        json_array_append_new(nodes, o);
    }
    return nodes;
}

json_t *extract_cpu(const struct source *src, char *err, size_t errlen)
{
    hwloc_topology_t topo;
    if (topo_load(src, 0, "cpu", &topo, err, errlen) < 0)
        return NULL;
    json_t *cpu = json_object();
    hwloc_obj_t root = hwloc_get_root_obj(topo), pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
    json_set_str(cpu, "model", pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL);
    json_set_str(cpu, "architecture", hwloc_obj_get_info_by_name(root, "Architecture"));
    json_object_set_new(cpu, "packages", json_integer(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE)));
    json_object_set_new(cpu, "cores", json_integer(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE)));
    json_object_set_new(cpu, "pus", json_integer(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU)));
    json_object_set_new(cpu, "memory_bytes", json_integer((json_int_t)root->total_memory));
    json_object_set_new(cpu, "numa_nodes", numa_json(topo));
    json_object_set_new(cpu, "caches", caches_json(topo));
    hwloc_topology_destroy(topo);
    return cpu;
}
