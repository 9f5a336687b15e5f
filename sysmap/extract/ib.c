/* ib: InfiniBand HCAs and their ports from /sys/class/infiniband. Works on
 * every node without libibnetdisc; the fabric extractor does the rest. */
#include "topology.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* sysfs gives "4: ACTIVE" and "5: LinkUp": keep the words. */
static void strip_code(char *text)
{
    char *colon = strstr(text, ": ");
    if (colon)
        memmove(text, colon + 2, strlen(colon + 2) + 1);
}

static json_t *port_json(const struct source *src, const char *hca, const char *port)
{
    json_t *p = json_object();
    char text[128];
    char *end;
    long num = strtol(port, &end, 10);
    json_object_set_new(p, "port", *end ? json_null() : json_integer(num));
    if (src_read(src, text, sizeof(text), "/sys/class/infiniband/%s/ports/%s/state", hca, port) >= 0) {
        strip_code(text);
        json_set_str(p, "state", text);
    } else {
        json_set_str(p, "state", NULL);
    }
    if (src_read(src, text, sizeof(text), "/sys/class/infiniband/%s/ports/%s/phys_state",
                 hca, port) >= 0) {
        strip_code(text);
        json_set_str(p, "phys_state", text);
    } else {
        json_set_str(p, "phys_state", NULL);
    }
    json_set_file_str(p, "rate", src, "/sys/class/infiniband/%s/ports/%s/rate", hca, port);
    json_set_file_int(p, "lid", src, "/sys/class/infiniband/%s/ports/%s/lid", hca, port);
    json_set_file_int(p, "sm_lid", src, "/sys/class/infiniband/%s/ports/%s/sm_lid", hca, port);
    json_set_file_str(p, "link_layer", src, "/sys/class/infiniband/%s/ports/%s/link_layer",
                      hca, port);
    return p;
}

json_t *extract_ib(const struct source *src, char *err, size_t errlen)
{
    /* No HCA: an empty list, not an error. */
    char **hcas = src_list_for(src, "ib", "/sys/class/infiniband", 1, err, errlen);
    if (!hcas)
        return NULL;
    struct osdev_numa numa;
    osdev_numa_load(src, &numa);
    json_t *list = json_array();
    for (size_t i = 0; hcas[i]; i++) {
        const char *h = hcas[i];
        json_t *o = json_object();
        json_set_str(o, "name", h);
        json_set_file_str(o, "node_guid", src, "/sys/class/infiniband/%s/node_guid", h);
        json_set_file_str(o, "fw_ver", src, "/sys/class/infiniband/%s/fw_ver", h);
        json_set_file_str(o, "board_id", src, "/sys/class/infiniband/%s/board_id", h);
        char dir[300];
        snprintf(dir, sizeof(dir), "/sys/class/infiniband/%s/device", h);
        json_set_device_numa(o, &numa, h, src, dir);
        json_t *ports = json_array();
        char **pnames = src_list(src, "/sys/class/infiniband/%s/ports", h);
        for (size_t j = 0; pnames && pnames[j]; j++)
            json_array_append_new(ports, port_json(src, h, pnames[j]));
        names_free(pnames);
        json_object_set_new(o, "ports", ports);
        json_array_append_new(list, o);
    }
    names_free(hcas);
    osdev_numa_free(&numa);
    return json_pack("{so}", "hcas", list);
}
