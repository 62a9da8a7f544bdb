// What a HardwareProfile says, read the way OpenShift AI's dashboard reads it (annotations
// opendatahub.io/display-name, -description, -disabled, -dashboard-feature-visibility; the
// spec's identifiers and its Kueue scheduling).
export const CATALOG_NS = 'gpu-catalog';

export function profileInfo(p) {
  const a = p.metadata.annotations || {};
  const k = (p.spec.scheduling && p.spec.scheduling.kueue) || {};
  let visibility = [];
  try {
    visibility = JSON.parse(a['opendatahub.io/dashboard-feature-visibility'] || '[]');
  } catch {
    visibility = [];
  }
  return {
    name: p.metadata.name,
    namespace: p.metadata.namespace,
    displayName: a['opendatahub.io/display-name'] || p.metadata.name,
    description: a['opendatahub.io/description'] || '',
    disabled: a['opendatahub.io/disabled'] === 'true',
    visibility,
    identifiers: p.spec.identifiers || [],
    queue: k.localQueueName || '',
    priorityClass: k.priorityClass || '',
  };
}
