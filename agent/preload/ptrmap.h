/* ptrmap: a small thread-safe map from pointers to pointers, for the
 * objects the interposer hands out under glibc types (our DIR* streams,
 * our FILE* streams), so the wrappers can tell them from glibc's own.
 *
 * There are only ever as many entries as the program has such streams
 * open, so a linear scan under a mutex is enough; a lookup in an empty map
 * (the common case for programs not using adafs) takes no lock. */
#ifndef ADAFS_PRELOAD_PTRMAP_H
#define ADAFS_PRELOAD_PTRMAP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct ptrmap_item {
    const void *key;
    void *value;
};

struct ptrmap {
    pthread_mutex_t lock;
    struct ptrmap_item *items;
    size_t len, cap;
    atomic_size_t count;
};

#define PTRMAP_INIT { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0 }

/* 0 or -ENOMEM. */
int ptrmap_put(struct ptrmap *m, const void *key, void *value);
/* The value stored for key (NULL if none); removes it if remove. */
void *ptrmap_get(struct ptrmap *m, const void *key, bool remove);

/* fork() must not copy a map whose lock another thread holds. */
void ptrmap_lock(struct ptrmap *m);
void ptrmap_unlock(struct ptrmap *m);

#endif
