/*
 * controller/notebook.h: the names of Kubeflow's Notebook (workbench) that the notebook
 * controller, the culler, the webhooks and the Jupyter proxy share (internal to src/controller).
 */
#ifndef FATIA_CONTROLLER_NOTEBOOK_H
#define FATIA_CONTROLLER_NOTEBOOK_H

#include <jansson.h>
#include <stdbool.h>

#include "base/clock.h"

#define FATIA_NB_ANN_STOPPED       "kubeflow-resource-stopped"
#define FATIA_NB_ANN_LAST_ACTIVITY "notebooks.kubeflow.org/last-activity"
#define FATIA_NB_ANN_HOME          "fatia.dev/notebook-home"
#define FATIA_NB_LABEL_NAME        "notebook-name"

struct ctl;
struct notebook_ctl;

int fatia_ctlr_notebook_ctl_new(struct ctl *c, struct notebook_ctl **ret);
void fatia_ctlr_notebook_ctl_free(struct notebook_ctl *n);

/* The annotation kubeflow-resource-stopped is present. */
bool fatia_ctlr_notebook_stopped(const json_t *nb);
/* The pod a Notebook runs as (a new tree), or NULL when out of memory (pure: the unit tests). */
json_t *fatia_ctlr_notebook_pod(const json_t *nb);
/* The Notebook's status for its pod (NULL: none), a new tree (pure). */
json_t *fatia_ctlr_notebook_status(const json_t *nb, const json_t *pod);

/* The culler (culler.c): NULL in *ret when culling is off (no idle time or no upstream). */
struct culler;
int fatia_ctlr_culler_new(struct ctl *c, struct culler **ret);
void fatia_ctlr_culler_free(struct culler *cu);
/* Pure: Jupyter's /api/status and /api/kernels answers -> cull? *ret_last: the last activity (a
 * busy kernel: now; 0 when neither answer says). */
bool fatia_ctlr_cull_decide(const json_t *status, const json_t *kernels, fatia_usec_t now,
                            fatia_usec_t idle, fatia_usec_t *ret_last);

#endif
