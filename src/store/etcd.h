/*
 * store/etcd.h: the store's etcd v3 backend (private to src/store; store.c dispatches to it when
 * fatia_store_opts.etcd_endpoints is set). The contract is store.h's, unchanged: batches with
 * resourceVersions assigned by the caller, committed atomically, loaded back at start.
 */
#ifndef FATIA_STORE_ETCD_H
#define FATIA_STORE_ETCD_H

#include "store/store.h"

struct fatia_store_etcd;

/* Connects, checks that etcd answers, reads the store's resourceVersion (*ret_rv). */
int fatia_store_etcd_open(const struct fatia_store_opts *o, struct fatia_store_etcd **ret,
                          uint64_t *ret_rv, char *why, size_t why_n);
void fatia_store_etcd_close(struct fatia_store_etcd *e);

int fatia_store_etcd_load(struct fatia_store_etcd *e,
                          int (*cb)(void *arg, const struct fatia_store_row *row), void *arg);
int fatia_store_etcd_load_log(struct fatia_store_etcd *e, uint64_t after,
                              int (*cb)(void *arg, const struct fatia_store_row *row), void *arg);
uint64_t fatia_store_etcd_log_first(struct fatia_store_etcd *e);

/* One etcd transaction for the ops of the batches from first on; *rv: the store's rv before,
 * the last op's after (unchanged on failure). -ESTALE: another writer changed the prefix. */
int fatia_store_etcd_commit(struct fatia_store_etcd *e, struct fatia_store_batch *first,
                            uint64_t *rv);

/* fatia_store_fill_add for etcd: the ops' share of one transaction's request, against the
 * limits of fatia_store_opts (etcd_max_request_bytes, etcd_max_txn_ops). */
bool fatia_store_etcd_fill_add(const struct fatia_store_etcd *e, struct fatia_store_fill *f,
                               const struct fatia_store_op *ops, size_t n);

/* Replica mode (store.h): the watch's eventfd (-1 otherwise) and the next change. */
int fatia_store_etcd_changes_fd(const struct fatia_store_etcd *e);
int fatia_store_etcd_next_change(struct fatia_store_etcd *e, struct fatia_store_change *ret);

/* 0 when etcd answers its status call and raises no alarm, else a negative code. */
int fatia_store_etcd_check(struct fatia_store_etcd *e);

#endif
