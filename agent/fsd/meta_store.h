/* meta_store: what meta.c's requests use of the store of metadata records
 * (meta_store.c), internal to the two; the rest of the server uses
 * server.h's meta_* calls. A record's key is its parent, a NUL and its
 * name (meta_store.c); each record is read and changed under its lock. */
#ifndef ADAFS_FSD_META_STORE_H
#define ADAFS_FSD_META_STORE_H

#include <pthread.h>
#include <stdbool.h>

#include "server.h"

/* Longest key: a path plus the NUL that replaces its last slash. */
#define KEY_MAX (FS_PATH_MAX + 2)

/* Checks a path as clients send it (normalised, absolute, not "/") and
 * writes its key. Returns the key length or -EINVAL. */
int path_key(const char *path, char key[KEY_MAX]);
/* The lock of the record under key (one of srv->record_locks). */
pthread_mutex_t *key_lock(struct server *srv, const char *key, int klen);
/* 0, -ENOENT or -EIO (logged). */
int get_record(struct server *srv, const char *key, int klen, struct fs_record *rec);
/* 0, -ENOSPC (the server's quota) or -EIO (logged). */
int put_record(struct server *srv, const char *key, int klen, const struct fs_record *rec);
int del_record(struct server *srv, const char *key, int klen);
/* The parent of path must be a directory: 0, -ENOENT, -ENOTDIR or -EIO. */
int check_parent(struct server *srv, const char *path);
/* A directory record was removed: forget every cached directory. */
void dirs_forget(struct server *srv);

#endif
