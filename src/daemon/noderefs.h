/*
 * daemon/noderefs.h: the Secrets, ConfigMaps and PersistentVolumeClaims a pod names, as the
 * node role's client fetches them (remote.c; docs/fleet.md, "The node role"). Pure: no I/O.
 */
#ifndef FATIA_DAEMON_NODEREFS_H
#define FATIA_DAEMON_NODEREFS_H

#include <jansson.h>
#include <stdbool.h>

/* Whether name can be an object's name (a DNS-1123 subdomain: [a-z0-9.-], at most 253, not
 * "." or ".."): only such names are put in a URL path. */
bool fatia_noderefs_name_ok(const char *name);

/* Adds to out, for each object of the pod's own namespace that pod names (env valueFrom
 * secretKeyRef / configMapKeyRef and envFrom of every container, init and ephemeral ones
 * included; volumes secret, configMap, projected sources, persistentVolumeClaim, a generic
 * ephemeral volume's claim POD-VOLUME; imagePullSecrets), the key "PLURAL/NS/NAME" with the
 * value [PLURAL, NS, NAME]. A name that fatia_noderefs_name_ok refuses is left out (the pod
 * then finds no such object). 0, or -ENOMEM. */
int fatia_noderefs_of_pod(const json_t *pod, json_t *out);

#endif
