/*
 * model/labels.h: the name and label syntax rules of Kubernetes (apimachinery validation).
 *
 * Each check returns true when s is valid; otherwise false with a message in why that says what
 * is expected, worded as upstream words it, e.g. for a DNS-1123 label: "a lowercase RFC 1123
 * label must consist of lower case alphanumeric characters or '-', and must start and end with an
 * alphanumeric character (e.g. 'my-name', or '123-abc')". why may be NULL. When upstream reports
 * several problems they are joined with "; "; why is not written on success. NULL is checked as
 * the empty string.
 */
#ifndef FATIA_MODEL_LABELS_H
#define FATIA_MODEL_LABELS_H

#include <stdbool.h>
#include <stddef.h>

#define FATIA_WHY_MAX 256

bool fatia_is_dns1123_label(const char *s, char *why, size_t why_n);     /* <= 63 */
bool fatia_is_dns1123_subdomain(const char *s, char *why, size_t why_n); /* <= 253 */
bool fatia_is_dns1035_label(const char *s, char *why, size_t why_n);     /* Service names */
/* Label and annotation keys: [prefix/]name, prefix a DNS-1123 subdomain, name <= 63 chars of
 * [A-Za-z0-9_.-] beginning and ending alphanumeric. */
bool fatia_is_qualified_name(const char *s, char *why, size_t why_n);
/* Label values: empty, or <= 63 chars of [A-Za-z0-9_.-] beginning and ending alphanumeric. */
bool fatia_is_label_value(const char *s, char *why, size_t why_n);
/* Resource names (nvidia.com/gpu, cpu, fatia.dev/gpu-milli): a qualified name. */
bool fatia_is_resource_name(const char *s, char *why, size_t why_n);

#endif
