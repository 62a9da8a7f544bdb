/*
 * controller/tenancy.h: the tenant rules and the quota door (tenancy.c; docs/apiserver.md,
 * "Roles"), registered by fatia_controllers_webhooks (internal to src/controller).
 */
#ifndef FATIA_CONTROLLER_TENANCY_H
#define FATIA_CONTROLLER_TENANCY_H

#include "apiserver/apiserver.h"
#include "apiserver/client.h"

/* Adds tenancy-restrict (mutating: register it before every other mutating plugin) and
 * tenancy-status (validating). 0, -EINVAL, -ENOMEM. */
int fatia_controller_tenancy_restrict(struct fatia_apiserver *s);

/* Adds quota-door (mutating: register it after hardware-profile-injection and before
 * kueue-defaults); it reads SchedulerConfig, Namespaces and LocalQueues from client's cache. */
int fatia_controller_quota_door(struct fatia_apiserver *s, struct fatia_client *client);

#endif
