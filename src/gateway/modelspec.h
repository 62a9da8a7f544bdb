/*
 * gateway/modelspec.h: model shapes (data/models.yaml), the input of the serving planner and of
 * engine-sim's timing model.
 *
 * A shape is the handful of config.json numbers that decide memory and speed: parameter count,
 * layers, hidden and MLP sizes, attention and KV heads, head dimension, vocabulary, context. Shapes
 * are data, read at run time from $FATIA_DATA_DIR/models.yaml (or the source tree's data/), so a
 * new model needs no rebuild; `--params N --layers L --kv-heads K --head-dim D` describes one on
 * the command line.
 */
#ifndef FATIA_GATEWAY_MODELSPEC_H
#define FATIA_GATEWAY_MODELSPEC_H

#include "base/compat.h"

#include "model/diag.h"

struct fatia_model_spec {
    char name[128];
    uint64_t params;
    uint32_t layers;
    uint32_t hidden;       /* 0 = unknown (planner estimates activations from params) */
    uint32_t intermediate; /* 0 = unknown */
    uint32_t heads;        /* attention heads; 0 = unknown (no TP divisibility check) */
    uint32_t kv_heads;
    uint32_t head_dim;
    uint32_t vocab; /* 0 = unknown */
    bool tied_embeddings;
    uint32_t max_context; /* 0 = unknown */
};

/* Loads every shape of a models file (path NULL = <data dir>/models.yaml). Problems go to diag
 * with file:line and the field path. Returns 0 and a fatia_malloc'ed array (*ret, *ret_n),
 * -FATIA_E_INVALID, -ENOENT, -ENOMEM. */
int fatia_modelspec_load_all(const char *path, struct fatia_diag *diag,
                             struct fatia_model_spec **ret, size_t *ret_n);

/* The shape named name (the name or an alias, case-insensitive) in the file; -ENOENT when no such
 * model (diag says which names exist), other errors as fatia_modelspec_load_all. */
int fatia_modelspec_find(const char *path, const char *name, struct fatia_diag *diag,
                         struct fatia_model_spec *ret);

/* Bytes of KV cache per token for the whole model: 2 x layers x kv_heads x head_dim x elem. */
uint64_t fatia_modelspec_kv_bytes_per_token(const struct fatia_model_spec *m, double elem_bytes);

#endif
