/*
 * model/kinds/printers_event.c: kubectl's built-in Event printer (k8s.io/kubernetes
 * pkg/printers/internalversion/printers.go: eventColumnDefinitions, printEvent), so that
 * `kubectl get events` against fatiad prints what it prints against kube-apiserver:
 *
 *     LAST SEEN   TYPE      REASON      OBJECT             MESSAGE
 *     12s         Warning   Preempted   pod/train-a2-x     Preempted to accommodate ...
 *
 * and, with -o wide, SUBOBJECT, SOURCE, FIRST SEEN, COUNT and NAME after them. Unlike every
 * other kind there is no Name column first and no Age last (the kind sets columns_whole).
 *
 * The cells, as printEvent computes them:
 *   Last Seen   lastTimestamp; if unset, First Seen; with a series, series.lastObservedTime
 *   First Seen  firstTimestamp; if unset, eventTime (a MicroTime)
 *   Object      lower-cased involvedObject.kind, "/name" when the name is set
 *   Source      source.component (else reportingComponent), ", " + source.host (else
 *               reportingInstance) when that is set
 *   Message     trimmed of white space;  Count  series.count, else count, else 1
 * Strings absent from the object are "" (Go's zero value), not <none>. The two times are
 * "date" columns whose computed cell is the timestamp: the table turns it into an age, and a
 * missing one prints "<unknown>" (translateTimestampSince of a zero time). Pure: no clock.
 */
#include "base/compat.h"

#include <ctype.h>

#include "base/json.h"
#include "model/kinds/kinds.h"

static const char *str_or_empty(const json_t *obj, const char *path)
{
    const json_t *v = fatia_json_path(obj, path);

    return json_is_string(v) ? json_string_value(v) : "";
}

static bool set(const char *s)
{
    return s && *s;
}

static json_t *first_seen(const json_t *ev, int64_t now)
{
    const char *t = str_or_empty(ev, "firstTimestamp");

    (void)now;
    if (!set(t))
        t = str_or_empty(ev, "eventTime");
    return json_string(set(t) ? t : "<unknown>");
}

static json_t *last_seen(const json_t *ev, int64_t now)
{
    const char *t;

    if (json_is_object(json_object_get(ev, "series"))) {
        t = str_or_empty(ev, "series.lastObservedTime");
        return json_string(set(t) ? t : "<unknown>");
    }
    t = str_or_empty(ev, "lastTimestamp");
    return set(t) ? json_string(t) : first_seen(ev, now);
}

static json_t *type_cell(const json_t *ev, int64_t now)
{
    (void)now;
    return json_string(str_or_empty(ev, "type"));
}

static json_t *reason_cell(const json_t *ev, int64_t now)
{
    (void)now;
    return json_string(str_or_empty(ev, "reason"));
}

static json_t *object_cell(const json_t *ev, int64_t now)
{
    const char *kind = str_or_empty(ev, "involvedObject.kind");
    const char *name = str_or_empty(ev, "involvedObject.name");
    size_t kl = strlen(kind), nl = strlen(name);
    char *buf = malloc(kl + nl + 2);
    json_t *r;

    (void)now;
    if (!buf)
        return NULL;
    for (size_t i = 0; i < kl; i++)
        buf[i] = (char)tolower((unsigned char)kind[i]);
    buf[kl] = '\0';
    if (nl) {
        buf[kl] = '/';
        memcpy(buf + kl + 1, name, nl + 1);
    }
    r = json_string(buf);
    free(buf);
    return r;
}

static json_t *subobject_cell(const json_t *ev, int64_t now)
{
    (void)now;
    return json_string(str_or_empty(ev, "involvedObject.fieldPath"));
}

static json_t *source_cell(const json_t *ev, int64_t now)
{
    const char *comp = str_or_empty(ev, "source.component");
    const char *inst = str_or_empty(ev, "source.host");

    (void)now;
    if (!set(comp))
        comp = str_or_empty(ev, "reportingComponent");
    if (!set(inst))
        inst = str_or_empty(ev, "reportingInstance");
    if (!set(inst))
        return json_string(comp);
    return json_sprintf("%s, %s", comp, inst);
}

static json_t *message_cell(const json_t *ev, int64_t now)
{
    const char *m = str_or_empty(ev, "message");
    size_t n;

    (void)now;
    while (*m && isspace((unsigned char)*m))
        m++;
    n = strlen(m);
    while (n && isspace((unsigned char)m[n - 1]))
        n--;
    return json_stringn(m, n);
}

static json_t *count_cell(const json_t *ev, int64_t now)
{
    json_t *series = json_object_get(ev, "series");
    json_int_t c;

    (void)now;
    if (json_is_object(series))
        return json_integer(json_integer_value(json_object_get(series, "count")));
    c = json_integer_value(json_object_get(ev, "count"));
    return json_integer(c ? c : 1);
}

static json_t *name_cell(const json_t *ev, int64_t now)
{
    (void)now;
    return json_string(str_or_empty(ev, "metadata.name"));
}

const struct fatia_column fatia_kind_event_columns[] = {
    {"Last Seen", "date", NULL, 0,
     "The time at which the most recent occurrence of this event was recorded.", last_seen},
    {"Type", "string", NULL, 0,
     "Type of this event (Normal, Warning), new types could be added "
     "in the future",
     type_cell},
    {"Reason", "string", NULL, 0,
     "This should be a short, machine understandable string that gives the reason for the "
     "transition into the object's current status.",
     reason_cell},
    {"Object", "string", NULL, 0, "The object that this event is about.", object_cell},
    {"Subobject", "string", NULL, 1,
     "If referring to a piece of an object instead of an entire object, this string should "
     "contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].",
     subobject_cell},
    {"Source", "string", NULL, 1,
     "The component reporting this event. Should be a short machine understandable string.",
     source_cell},
    {"Message", "string", NULL, 0, "A human-readable description of the status of this operation.",
     message_cell},
    {"First Seen", "date", NULL, 1,
     "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
     first_seen},
    {"Count", "integer", NULL, 1, "The number of times this event has occurred.", count_cell},
    {"Name", "string", NULL, 1,
     "Name must be unique within a namespace. Is required when creating resources, although some "
     "resources may allow a client to request the generation of an appropriate name "
     "automatically. Name is primarily intended for creation idempotence and configuration "
     "definition. Cannot be updated.",
     name_cell},
    {NULL}};
