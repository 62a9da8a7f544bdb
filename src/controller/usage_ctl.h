/*
 * controller/usage_ctl.h: the usage controller's entry points (usage.c; internal to
 * src/controller).
 */
#ifndef FATIA_CONTROLLER_USAGE_CTL_H
#define FATIA_CONTROLLER_USAGE_CTL_H

struct ctl;
struct usage_ctl;
struct fatia_buf;

int fatia_ctlr_usage_ctl_new(struct ctl *c, struct usage_ctl **ret);
void fatia_ctlr_usage_ctl_free(struct usage_ctl *u);
/* fatia_usage_resource_seconds_total, from the records in the cache. */
void fatia_ctlr_usage_ctl_metrics(struct usage_ctl *u, struct fatia_buf *out);

#endif
