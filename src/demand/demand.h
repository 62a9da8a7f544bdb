/*
 * demand/demand.h: the demand layer's start-up hook.
 *
 * The model layer validates objects from their schemas; the rules that need the demand layer
 * (compiling CEL selectors, NVIDIA's opaque device configs) are registered into it through
 * fatia_kind_add_check (model/kind.h) by fatia_demand_register_checks. Every program that
 * decodes objects calls it once at start-up, before any decoding thread starts: the `fatia`
 * CLI in main() and fatiad at boot.
 */
#ifndef FATIA_DEMAND_DEMAND_H
#define FATIA_DEMAND_DEMAND_H

/* Registers the demand layer's validation checks: DeviceClass, ResourceClaim and
 * ResourceClaimTemplate selectors must compile ("spec.selectors[0].cel.expression: compilation
 * failed: 1:27: undeclared reference to 'devcie'"), and configs for driver gpu.nvidia.com must be
 * valid NVIDIA GpuConfig / MigDeviceConfig / VfioDeviceConfig parameters. Idempotent.
 * Returns 0, or -FATIA_E_LIMIT if the model's table of extra checks is full. */
int fatia_demand_register_checks(void);

#endif
