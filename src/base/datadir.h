/*
 * base/datadir.h: where fatia's data files are (data/gpus, data/fleets, data/models.yaml).
 *
 * One rule for every program and library: $FATIA_DATA_DIR when it is set and not empty, else
 * the source tree's data/ (FATIA_SOURCE_DIR, fixed at build time). The GPU catalog
 * (supply/catalog.c), the default fleet of fatiad and of the supply commands, and the model
 * shapes of the serving plane all resolve through here, so they cannot disagree. This is not
 * fatiad's own --data-dir (its store, tokens and kubeconfig).
 */
#ifndef FATIA_BASE_DATADIR_H
#define FATIA_BASE_DATADIR_H

#include <stddef.h>

/* The data directory (borrowed: the environment's string or a constant). */
const char *fatia_data_dir(void);

/* DATA_DIR/rel into buf (truncated to n - 1 bytes, as snprintf). */
void fatia_data_path(char *buf, size_t n, const char *rel);

#endif
