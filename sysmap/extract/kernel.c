/* kernel: the running kernel's release, version and loaded modules. */
#include "extract.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int module_cmp(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

json_t *extract_kernel(const struct source *src, char *err, size_t errlen)
{
    char release[256], version[512], path[PATH_MAX];
    int rc = src_read(src, release, sizeof(release), "/proc/sys/kernel/osrelease");
    if (rc < 0) {
        src_path(src, path, sizeof(path), "/proc/sys/kernel/osrelease");
        snprintf(err, errlen, "kernel: cannot read %s: %s", path, strerror(-rc));
        return NULL;
    }
    json_t *k = json_object();
    json_set_str(k, "release", release);
    json_set_str(k, "version", src_read(src, version, sizeof(version), "/proc/version") >= 0
                               ? version : NULL);
    /* Kernels without module support (and some sandboxes) have no
     * /proc/modules: that is "no list", not an error. */
    src_path(src, path, sizeof(path), "/proc/modules");
    FILE *f = fopen(path, "re");
    if (!f) {
        if (errno != ENOENT) {
            snprintf(err, errlen, "kernel: cannot read %s: %s", path, strerror(errno));
            json_decref(k);
            return NULL;
        }
        json_object_set_new(k, "modules", json_null());
        return k;
    }
    json_t *mods = json_array();
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        char *space = strchr(line, ' ');
        if (space)
            *space = '\0';
        json_t *name = json_string(line);
        if (name)
            json_array_append_new(mods, name);
    }
    fclose(f);
    /* /proc/modules lists the newest first; sorted, two nodes with the same
     * modules report the same value and share one row in the database. */
    size_t n = json_array_size(mods);
    json_t **items = calloc(n ? n : 1, sizeof(*items));
    for (size_t i = 0; items && i < n; i++)
        items[i] = json_incref(json_array_get(mods, i));
    if (items) {
        qsort(items, n, sizeof(*items), module_cmp);
        json_array_clear(mods);
        for (size_t i = 0; i < n; i++)
            json_array_append_new(mods, items[i]);
        free(items);
    }
    json_object_set_new(k, "modules", mods);
    return k;
}
