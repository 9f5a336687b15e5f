/* ptrmap: see ptrmap.h. */
#include "ptrmap.h"

#include <errno.h>
#include <stdlib.h>

int ptrmap_put(struct ptrmap *m, const void *key, void *value)
{
    int rc = 0;
    pthread_mutex_lock(&m->lock);
    if (m->len == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        struct ptrmap_item *grown = realloc(m->items, cap * sizeof *grown);
        if (grown) {
            m->items = grown;
            m->cap = cap;
        } else {
            rc = -ENOMEM;
        }
    }
    if (rc == 0) {
        m->items[m->len].key = key;
        m->items[m->len].value = value;
        m->len++;
        atomic_store(&m->count, m->len);
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

void *ptrmap_get(struct ptrmap *m, const void *key, bool remove)
{
    if (!key || atomic_load_explicit(&m->count, memory_order_acquire) == 0)
        return NULL;
    void *value = NULL;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->len; i++)
        if (m->items[i].key == key) {
            value = m->items[i].value;
            if (remove) {
                m->items[i] = m->items[--m->len];
                atomic_store(&m->count, m->len);
            }
            break;
        }
    pthread_mutex_unlock(&m->lock);
    return value;
}

void ptrmap_lock(struct ptrmap *m)
{
    pthread_mutex_lock(&m->lock);
}

void ptrmap_unlock(struct ptrmap *m)
{
    pthread_mutex_unlock(&m->lock);
}
