/*
 * controller/tenancy.h: the tenant rules and the quota door (tenancy.c; docs/apiserver.md,
 * "Roles"), registered by fatia_controllers_webhooks, or fatia_controllers_tenant_webhooks when
 * the controllers do not run (internal to src/controller).
 */
#ifndef FATIA_CONTROLLER_TENANCY_H
#define FATIA_CONTROLLER_TENANCY_H

#include "client/client.h"
#include "client/plugin.h"

/* Describes tenancy-restrict (mutating: registered before every other mutating plugin) in
 * out[0] and tenancy-status (validating) in out[1]. 0 or -EINVAL. */
int fatia_controller_tenancy_restrict(struct fatia_admission out[2]);

/* Describes quota-door (mutating: registered after hardware-profile-injection and before
 * kueue-defaults); it reads SchedulerConfig, Namespaces and LocalQueues from client's cache.
 * client NULL (no controllers): the closed door, which refuses a tenant's new GPU Pod or Job.
 * 0 or -EINVAL. */
int fatia_controller_quota_door(struct fatia_client *client, struct fatia_admission *out);

#endif
