/*
 * demand/demand.h: the demand layer's validation checks, as a value.
 *
 * The model layer validates objects from their schemas; the rules that need the layers above it
 * (compiling CEL selectors, NVIDIA's opaque device configs) are extra checks (model/kind.h) that
 * every decoder passes explicitly: fatia_object_decode, fatia_objset_load and
 * fatia_apiserver_new take them as an argument. There is no registry and no start-up call, so
 * `fatia validate`, fatiad's API and the tests cannot be wired differently: each call site names
 * the set it decodes with. The table is constant (no initialisation, safe from any thread).
 */
#ifndef FATIA_DEMAND_DEMAND_H
#define FATIA_DEMAND_DEMAND_H

#include "model/kind.h"

/* The demand layer's validation checks: DeviceClass, ResourceClaim and ResourceClaimTemplate
 * selectors must compile ("spec.selectors[0].cel.expression: compilation failed: 1:27:
 * undeclared reference to 'devcie'"), and configs for driver gpu.nvidia.com must be valid NVIDIA
 * GpuConfig / MigDeviceConfig / VfioDeviceConfig parameters. */
extern const struct fatia_checks fatia_demand_checks;

#endif
