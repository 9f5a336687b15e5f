/* extract: the collector's extractors and the helpers they share.
 *
 * Every extractor reads its sources below a root directory ("/" on a real
 * node, a fixture tree in tests), returns one JSON object, and on failure
 * returns NULL with a message naming the file and the error. */
#ifndef SYSMAP_EXTRACT_H
#define SYSMAP_EXTRACT_H

#include <jansson.h>
#include <stddef.h>

struct source {
    const char *root;        /* "/" or a fixture tree; never ends in '/' unless "/" */
    const char *hwloc_xml;   /* topology file for cpu; NULL: discover (root "/") */
    const char *ib_cache;    /* ibnetdiscover --cache file for fabric; NULL: discover */
};

struct extractor {
    const char *name;
    const char *description;
    int by_default;          /* run when no -e is given */
    json_t *(*run)(const struct source *src, char *err, size_t errlen);
};

/* All extractors this build has, NULL-terminated by name. */
extern const struct extractor extractors[];
const struct extractor *extractor_find(const char *name);

json_t *extract_cpu(const struct source *src, char *err, size_t errlen);
json_t *extract_block(const struct source *src, char *err, size_t errlen);
json_t *extract_storage(const struct source *src, char *err, size_t errlen);
json_t *extract_pci(const struct source *src, char *err, size_t errlen);
json_t *extract_net(const struct source *src, char *err, size_t errlen);
json_t *extract_ib(const struct source *src, char *err, size_t errlen);
json_t *extract_fabric(const struct source *src, char *err, size_t errlen);
json_t *extract_kernel(const struct source *src, char *err, size_t errlen);

/* ---- reading below the root (source.c) ---- */

/* Joins root and a path formatted from fmt into buf. Returns 0, or
 * -ENAMETOOLONG. */
int src_path(const struct source *src, char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Reads a small text file below the root into buf without the trailing
 * newline. Returns its length or -errno. */
int src_read(const struct source *src, char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Reads a file holding one integer. Returns 0 or -errno (-EINVAL if not a
 * number). */
int src_read_ll(const struct source *src, long long *out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));


/* The NUMA node of a sysfs device: the numa_node file of the device or of
 * the nearest parent that has one, following the sysfs symlink below the
 * root. -1 if none (no NUMA, virtual device). */
int src_numa_node(const struct source *src, const char *sysfs_dir);

/* Adds key: string, or key: null when value is NULL. */
void json_set_str(json_t *o, const char *key, const char *value);
/* Adds key: integer read from the file, or null when unreadable. */
void json_set_file_int(json_t *o, const char *key, const struct source *src, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Adds key: string read from the file, or null when unreadable. */
void json_set_file_str(json_t *o, const char *key, const struct source *src, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Directory entries that are not "." or "..", sorted, as a NULL-terminated
 * malloc'd array; free with names_free. NULL with errno set on failure. */
char **src_list(const struct source *src, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void names_free(char **names);

/* src_list for extractor who: a missing directory is an empty list when
 * missing_ok (no PCI bus, no HCA), otherwise NULL with err naming the path. */
char **src_list_for(const struct source *src, const char *who, const char *dir, int missing_ok,
                    char *err, size_t errlen);

/* Adds "numa_node": the NUMA node of the sysfs device dir, or null. */
void json_set_numa(json_t *o, const struct source *src, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
