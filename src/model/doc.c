/*
 * model/doc.c: YAML/JSON loading with positions, and YAML output (see doc.h for the model).
 *
 * The loader drives libyaml's event parser and builds jansson values directly; recursion depth is
 * bounded by FATIA_DOC_MAX_DEPTH and expansion by FATIA_DOC_MAX_NODES, so no input can exhaust the
 * stack or memory (fuzz/fuzz_doc.c). A parser error ends that file: libyaml cannot resume.
 */
#include "base/compat.h"

#include "model/doc.h"

#include <sys/stat.h>

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <unistd.h>
#include <yaml.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/json.h"
#include "base/str.h"
#include "base/vec.h"

/* ---- source map ------------------------------------------------------------------------- */

struct srcmap_slot {
    const json_t *parent; /* NULL = empty */
    uint64_t sub;
    struct fatia_srcpos pos;
};

struct fatia_srcmap {
    struct srcmap_slot *slots;
    size_t cap, n;
};

static uint64_t member_sub(const char *key, size_t index)
{
    return key ? fatia_hash_str(key) | 1 : (uint64_t)index << 1;
}

static size_t srcmap_find(const struct fatia_srcmap *m, const json_t *parent, uint64_t sub)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)(fatia_hash64(&parent, sizeof(parent)) ^ sub * 0x9E3779B97F4A7C15ull) & mask;

    while (m->slots[i].parent && (m->slots[i].parent != parent || m->slots[i].sub != sub))
        i = (i + 1) & mask;
    return i;
}

static int srcmap_put(struct fatia_srcmap *m, const json_t *parent, const char *key, size_t index,
                      struct fatia_srcpos pos)
{
    uint64_t sub = member_sub(key, index);
    size_t i;

    if ((m->n + 1) * 4 > m->cap * 3) {
        size_t ocap = m->cap, ncap = m->cap ? m->cap * 2 : 256;
        struct srcmap_slot *old = m->slots;
        m->slots = fatia_calloc(ncap, sizeof(*m->slots));
        if (!m->slots) {
            m->slots = old;
            return -ENOMEM;
        }
        m->cap = ncap;
        for (size_t j = 0; j < ocap; j++)
            if (old[j].parent)
                m->slots[srcmap_find(m, old[j].parent, old[j].sub)] = old[j];
        fatia_free(old);
    }
    i = srcmap_find(m, parent, sub);
    if (!m->slots[i].parent)
        m->n++;
    m->slots[i] = (struct srcmap_slot){parent, sub, pos};
    return 0;
}

bool fatia_srcmap_member(const struct fatia_srcmap *map, const json_t *parent, const char *key,
                         size_t index, struct fatia_srcpos *ret)
{
    size_t i;

    if (!map || !map->cap || !parent)
        return false;
    i = srcmap_find(map, parent, member_sub(key, index));
    if (!map->slots[i].parent)
        return false;
    *ret = map->slots[i].pos;
    return true;
}

/* ---- scalar resolution (go-yaml v2 rules) ------------------------------------------------ */

static bool is_one_of(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return true;
    return false;
}

static const char *const null_words[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const true_words[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                         "on",   "On",   "ON",   "y",   "Y",   NULL};
static const char *const false_words[] = {"false", "False", "FALSE", "no", "No", "NO",
                                          "off",   "Off",   "OFF",   "n",  "N",  NULL};

/* Integer text per Go's strconv.ParseInt(s, 0, 64) after removing '_': 0x, 0o, 0b, leading 0. */
static bool resolve_int(const char *s, json_int_t *ret)
{
    char clean[80];
    size_t n = 0;
    const char *p = s;
    int base = 10, neg = 0;
    unsigned long long v = 0;

    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if (!*p)
        return false;
    for (; *p; p++) {
        if (*p == '_')
            continue;
        if (n + 1 >= sizeof(clean))
            return false;
        clean[n++] = *p;
    }
    clean[n] = '\0';
    p = clean;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        base = 16, p += 2;
    else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O'))
        base = 8, p += 2;
    else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
        base = 2, p += 2;
    else if (p[0] == '0' && p[1])
        base = 8, p += 1;
    if (!*p)
        return false;
    for (; *p; p++) {
        int d;
        if (*p >= '0' && *p <= '9')
            d = *p - '0';
        else if (*p >= 'a' && *p <= 'f')
            d = *p - 'a' + 10;
        else if (*p >= 'A' && *p <= 'F')
            d = *p - 'A' + 10;
        else
            return false;
        if (d >= base)
            return false;
        if (v > (ULLONG_MAX - (unsigned)d) / (unsigned)base)
            return false;
        v = v * (unsigned)base + (unsigned)d;
    }
    if (neg ? v > (unsigned long long)INT64_MAX + 1 : v > INT64_MAX)
        return false;
    *ret = neg ? (json_int_t)(0 - v) : (json_int_t)v;
    return true;
}

static bool resolve_float(const char *s, double *ret)
{
    const char *p = s;
    bool digits = false;
    char *end;

    if (*p == '+' || *p == '-')
        p++;
    while (*p >= '0' && *p <= '9')
        p++, digits = true;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++, digits = true;
    }
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p)
        return false;
    *ret = strtod(s, &end);
    return isfinite(*ret);
}

#define TAG_PREFIX "tag:yaml.org,2002:"

static json_t *resolve_scalar(const yaml_event_t *ev, char *err, size_t err_n)
{
    const char *s = (const char *)ev->data.scalar.value;
    const char *tag = (const char *)ev->data.scalar.tag;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    json_int_t i;
    double d;

    if (tag && strcmp(tag, "!") != 0) {
        if (strcmp(tag, TAG_PREFIX "str") == 0)
            return json_stringn(s, ev->data.scalar.length);
        if (strcmp(tag, TAG_PREFIX "null") == 0)
            return json_null();
        if (strcmp(tag, TAG_PREFIX "bool") == 0) {
            if (is_one_of(s, true_words))
                return json_true();
            if (is_one_of(s, false_words))
                return json_false();
        } else if (strcmp(tag, TAG_PREFIX "int") == 0) {
            if (resolve_int(s, &i))
                return json_integer(i);
        } else if (strcmp(tag, TAG_PREFIX "float") == 0) {
            if (resolve_int(s, &i))
                return json_real((double)i);
            if (resolve_float(s, &d))
                return json_real(d);
        } else {
            snprintf(err, err_n, "unsupported YAML tag '%s'", tag);
            return NULL;
        }
        snprintf(err, err_n, "cannot read \"%s\" as %s", s, tag + strlen(TAG_PREFIX));
        return NULL;
    }
    if (!plain)
        return json_stringn(s, ev->data.scalar.length);
    if (is_one_of(s, null_words))
        return json_null();
    if (is_one_of(s, true_words))
        return json_true();
    if (is_one_of(s, false_words))
        return json_false();
    if (resolve_int(s, &i))
        return json_integer(i);
    if (resolve_float(s, &d))
        return json_real(d);
    if (strcmp(s, ".inf") == 0 || strcmp(s, "-.inf") == 0 || strcmp(s, ".nan") == 0 ||
        strcmp(s, ".Inf") == 0 || strcmp(s, ".NaN") == 0) {
        snprintf(err, err_n, "\"%s\" cannot be represented in JSON", s);
        return NULL;
    }
    return json_stringn(s, ev->data.scalar.length);
}

/* ---- the event-driven builder ------------------------------------------------------------ */

struct anchor {
    char *name;
    json_t *v;
};

struct loader {
    yaml_parser_t parser;
    struct fatia_srcmap *map; /* NULL: positions not wanted */
    size_t nodes;
    FATIA_VEC(struct anchor) anchors;
    /* the first error: */
    char err[256];
    struct fatia_srcpos err_pos;
    int err_code;
};

static struct fatia_srcpos mark_pos(yaml_mark_t m)
{
    return (struct fatia_srcpos){(uint32_t)m.line + 1, (uint32_t)m.column + 1};
}

static int fail(struct loader *l, int code, yaml_mark_t m, const char *fmt, ...) FATIA_PRINTF(4, 5);

static int fail(struct loader *l, int code, yaml_mark_t m, const char *fmt, ...)
{
    va_list ap;

    if (!l->err_code) {
        va_start(ap, fmt);
        vsnprintf(l->err, sizeof(l->err), fmt, ap);
        va_end(ap);
        l->err_pos = mark_pos(m);
        l->err_code = code;
    }
    return code;
}

static int next_event(struct loader *l, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&l->parser, ev)) {
        const char *problem = l->parser.problem ? l->parser.problem : "syntax error";
        if (l->parser.error == YAML_MEMORY_ERROR)
            return fail(l, -ENOMEM, l->parser.problem_mark, "out of memory");
        if (l->parser.context)
            return fail(l, -FATIA_E_PARSE, l->parser.problem_mark, "%s %s", problem,
                        l->parser.context);
        return fail(l, -FATIA_E_PARSE, l->parser.problem_mark, "%s", problem);
    }
    return 0;
}

static size_t count_nodes(const json_t *v)
{
    size_t n = 1;
    const char *k;
    json_t *c;
    size_t i;

    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, c) n += count_nodes(c);
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, c) n += count_nodes(c);
    }
    return n;
}

static int remember_anchor(struct loader *l, const yaml_char_t *name, json_t *v)
{
    struct anchor a;

    if (!name)
        return 0;
    a.name = fatia_strdup((const char *)name);
    if (!a.name)
        return -ENOMEM;
    a.v = json_incref(v);
    if (FATIA_VEC_PUSH(&l->anchors, a) < 0) {
        fatia_free(a.name);
        json_decref(v);
        return -ENOMEM;
    }
    return 0;
}

static int build(struct loader *l, yaml_event_t *ev, int depth, json_t **ret);

static int build_mapping(struct loader *l, yaml_event_t *start, int depth, json_t **ret)
{
    json_t *obj = json_object();
    yaml_event_t ev;
    int r;

    if (!obj)
        return -ENOMEM;
    for (;;) {
        char *key;
        json_t *val;
        struct fatia_srcpos kpos;

        r = next_event(l, &ev);
        if (r < 0)
            goto out_free_obj;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (ev.type != YAML_SCALAR_EVENT) {
            r = fail(l, -FATIA_E_PARSE, ev.start_mark,
                     "mapping keys must be scalars (a key here is a %s)",
                     ev.type == YAML_ALIAS_EVENT ? "alias" : "collection");
            yaml_event_delete(&ev);
            goto out_free_obj;
        }
        if (!strcmp((const char *)ev.data.scalar.value, "<<") &&
            ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
            r = fail(l, -FATIA_E_PARSE, ev.start_mark, "YAML merge keys ('<<') are not supported");
            yaml_event_delete(&ev);
            goto out_free_obj;
        }
        key = fatia_strndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
        kpos = mark_pos(ev.start_mark);
        yaml_event_delete(&ev);
        if (!key) {
            r = -ENOMEM;
            goto out_free_obj;
        }
        r = next_event(l, &ev);
        if (r < 0) {
            fatia_free(key);
            goto out_free_obj;
        }
        if (json_object_get(obj, key)) {
            struct fatia_srcpos first = {0, 0};
            fatia_srcmap_member(l->map, obj, key, 0, &first);
            if (first.line)
                r = fail(l, -FATIA_E_PARSE, ev.start_mark,
                         "duplicate key \"%s\" (first defined at line %u)", key, first.line);
            else
                r = fail(l, -FATIA_E_PARSE, ev.start_mark, "duplicate key \"%s\"", key);
            yaml_event_delete(&ev);
            fatia_free(key);
            goto out_free_obj;
        }
        /* Errors about a scalar point at the value; about a collection, or an empty value,
         * at its key. */
        if (ev.type == YAML_SCALAR_EVENT &&
            !(ev.data.scalar.length == 0 && ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE))
            kpos = mark_pos(ev.start_mark);
        r = build(l, &ev, depth + 1, &val);
        if (r < 0) {
            fatia_free(key);
            goto out_free_obj;
        }
        if (json_object_set_new(obj, key, val) < 0) {
            fatia_free(key);
            r = -ENOMEM;
            goto out_free_obj;
        }
        if (l->map && srcmap_put(l->map, obj, key, 0, kpos) < 0) {
            fatia_free(key);
            r = -ENOMEM;
            goto out_free_obj;
        }
        fatia_free(key);
    }
    r = remember_anchor(l, start->data.mapping_start.anchor, obj);
    if (r < 0)
        goto out_free_obj;
    *ret = obj;
    return 0;

out_free_obj:
    json_decref(obj);
    return r;
}

static int build_sequence(struct loader *l, yaml_event_t *start, int depth, json_t **ret)
{
    json_t *arr = json_array();
    yaml_event_t ev;
    int r;

    if (!arr)
        return -ENOMEM;
    for (;;) {
        json_t *val;
        struct fatia_srcpos pos;

        r = next_event(l, &ev);
        if (r < 0)
            goto out_free_arr;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        pos = mark_pos(ev.start_mark);
        r = build(l, &ev, depth + 1, &val);
        if (r < 0)
            goto out_free_arr;
        if (json_array_append_new(arr, val) < 0) {
            r = -ENOMEM;
            goto out_free_arr;
        }
        if (l->map && srcmap_put(l->map, arr, NULL, json_array_size(arr) - 1, pos) < 0) {
            r = -ENOMEM;
            goto out_free_arr;
        }
    }
    r = remember_anchor(l, start->data.sequence_start.anchor, arr);
    if (r < 0)
        goto out_free_arr;
    *ret = arr;
    return 0;

out_free_arr:
    json_decref(arr);
    return r;
}

/* Builds the node that starts with *ev (consumed: this function deletes it). */
static int build(struct loader *l, yaml_event_t *ev, int depth, json_t **ret)
{
    json_t *v = NULL;
    int r = 0;

    if (depth > FATIA_DOC_MAX_DEPTH) {
        r = fail(l, -FATIA_E_PARSE, ev->start_mark, "nesting deeper than %d levels",
                 FATIA_DOC_MAX_DEPTH);
        goto out;
    }
    if (++l->nodes > FATIA_DOC_MAX_NODES) {
        r = fail(l, -FATIA_E_LIMIT, ev->start_mark, "document has more than %u nodes",
                 FATIA_DOC_MAX_NODES);
        goto out;
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        char why[200] = "";
        v = resolve_scalar(ev, why, sizeof(why));
        if (!v) {
            r = why[0] ? fail(l, -FATIA_E_PARSE, ev->start_mark, "%s", why) : -ENOMEM;
            goto out;
        }
        r = remember_anchor(l, ev->data.scalar.anchor, v);
        break;
    }
    case YAML_MAPPING_START_EVENT:
        r = build_mapping(l, ev, depth, &v);
        break;
    case YAML_SEQUENCE_START_EVENT:
        r = build_sequence(l, ev, depth, &v);
        break;
    case YAML_ALIAS_EVENT: {
        const char *name = (const char *)ev->data.alias.anchor;
        json_t *target = NULL;
        for (size_t i = l->anchors.n; i-- > 0;) {
            if (strcmp(l->anchors.v[i].name, name) == 0) {
                target = l->anchors.v[i].v;
                break;
            }
        }
        if (!target) {
            r = fail(l, -FATIA_E_PARSE, ev->start_mark, "unknown anchor '%s'", name);
            goto out;
        }
        l->nodes += count_nodes(target);
        if (l->nodes > FATIA_DOC_MAX_NODES) {
            r = fail(l, -FATIA_E_LIMIT, ev->start_mark, "aliases expand the document past %u nodes",
                     FATIA_DOC_MAX_NODES);
            goto out;
        }
        v = json_deep_copy(target);
        if (!v)
            r = -ENOMEM;
        break;
    }
    default:
        r = fail(l, -FATIA_E_PARSE, ev->start_mark, "unexpected YAML event");
        break;
    }
out:
    yaml_event_delete(ev);
    if (r < 0) {
        json_decref(v);
        return r;
    }
    *ret = v;
    return 0;
}

static void loader_reset_doc(struct loader *l)
{
    for (size_t i = 0; i < l->anchors.n; i++) {
        fatia_free(l->anchors.v[i].name);
        json_decref(l->anchors.v[i].v);
    }
    l->anchors.n = 0;
    l->nodes = 0;
}

static void loader_release(struct loader *l)
{
    loader_reset_doc(l);
    FATIA_VEC_RELEASE(&l->anchors);
    yaml_parser_delete(&l->parser);
}

/* ---- docsets ----------------------------------------------------------------------------- */

void fatia_docset_init(struct fatia_docset *set)
{
    memset(set, 0, sizeof(*set));
}

void fatia_docset_release(struct fatia_docset *set)
{
    for (size_t i = 0; i < set->n; i++)
        json_decref(set->docs[i].root);
    fatia_free(set->docs);
    for (size_t i = 0; i < set->n_files; i++)
        fatia_free(set->files[i]);
    fatia_free(set->files);
    if (set->map) {
        fatia_free(set->map->slots);
        fatia_free(set->map);
    }
    fatia_docset_init(set);
}

static int add_doc(struct fatia_docset *set, json_t *root, const char *file,
                   struct fatia_srcpos pos, unsigned index)
{
    if (fatia_vec_reserve_raw((void **)&set->docs, &set->cap, set->n + 1, sizeof(*set->docs)) < 0)
        return -ENOMEM;
    set->docs[set->n++] = (struct fatia_doc){json_incref(root), file, pos, index};
    return 0;
}

/* A `kind: List` (apiVersion v1) document stands for its items. */
static int add_root(struct fatia_docset *set, json_t *root, const char *file,
                    struct fatia_srcpos pos, unsigned *index)
{
    const char *kind = fatia_json_str(root, "kind");
    json_t *items = json_object_get(root, "items");

    if (kind && strcmp(kind, "List") == 0 && json_is_array(items)) {
        for (size_t i = 0; i < json_array_size(items); i++) {
            struct fatia_srcpos ipos = pos;
            int r;
            fatia_srcmap_member(set->map, items, NULL, i, &ipos);
            r = add_doc(set, json_array_get(items, i), file, ipos, (*index)++);
            if (r < 0)
                return r;
        }
        return 0;
    }
    return add_doc(set, root, file, pos, (*index)++);
}

static const char *intern_file(struct fatia_docset *set, const char *name)
{
    char *copy;

    if (fatia_vec_reserve_raw((void **)&set->files, &set->files_cap, set->n_files + 1,
                              sizeof(*set->files)) < 0)
        return NULL;
    copy = fatia_strdup(name);
    if (copy)
        set->files[set->n_files++] = copy;
    return copy;
}

int fatia_docset_load_buf(struct fatia_docset *set, const char *name, const char *data, size_t n,
                          struct fatia_diag *diag)
{
    struct loader l = {0};
    const char *file;
    yaml_event_t ev;
    unsigned index = 0;
    bool bad_doc = false;
    int r = 0;

    if (!set->map) {
        set->map = fatia_calloc(1, sizeof(*set->map));
        if (!set->map)
            return -ENOMEM;
    }
    file = intern_file(set, name);
    if (!file)
        return -ENOMEM;
    if (!yaml_parser_initialize(&l.parser))
        return -ENOMEM;
    yaml_parser_set_input_string(&l.parser, (const unsigned char *)data, n);
    l.map = set->map;

    for (;;) {
        json_t *root = NULL;
        struct fatia_srcpos pos;

        r = next_event(&l, &ev);
        if (r < 0)
            break;
        if (ev.type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (ev.type != YAML_DOCUMENT_START_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        yaml_event_delete(&ev);
        r = next_event(&l, &ev);
        if (r < 0)
            break;
        pos = mark_pos(ev.start_mark);
        r = build(&l, &ev, 0, &root);
        if (r < 0)
            break;
        r = next_event(&l, &ev); /* DOCUMENT_END */
        if (r < 0) {
            json_decref(root);
            break;
        }
        yaml_event_delete(&ev);
        loader_reset_doc(&l);
        if (json_is_null(root)) {
            json_decref(root);
            continue;
        }
        if (!json_is_object(root)) {
            fatia_diag_add(diag, FATIA_DIAG_ERROR, file, pos.line, pos.col, NULL, NULL,
                           "document %u is a %s; a manifest must be a mapping", index,
                           fatia_json_type_name(root));
            json_decref(root);
            index++;
            bad_doc = true;
            continue;
        }
        r = add_root(set, root, file, pos, &index);
        json_decref(root);
        if (r < 0)
            break;
    }
    if (l.err_code) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, file, l.err_pos.line, l.err_pos.col, NULL, NULL,
                       "%s", l.err);
        r = l.err_code == -ENOMEM ? -ENOMEM : -FATIA_E_PARSE;
    }
    loader_release(&l);
    return r == 0 && bad_doc ? -FATIA_E_PARSE : r;
}

static int read_all(int fd, struct fatia_buf *b)
{
    char chunk[65536];

    for (;;) {
        ssize_t k = read(fd, chunk, sizeof(chunk));
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (k == 0)
            return 0;
        if (fatia_buf_append(b, chunk, (size_t)k) < 0)
            return -FATIA_E_LIMIT;
    }
}

static int load_file(struct fatia_docset *set, const char *path, struct fatia_diag *diag)
{
    struct fatia_buf b;
    int fd, r;

    fatia_buf_init(&b, FATIA_DOC_MAX_FILE_BYTES);
    fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        r = -errno;
        fatia_diag_add(diag, FATIA_DIAG_ERROR, path, 0, 0, NULL, NULL, "cannot open: %s",
                       fatia_strerror(r));
        return r;
    }
    r = read_all(fd, &b);
    if (fd != STDIN_FILENO)
        close(fd);
    if (r < 0) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, path, 0, 0, NULL, NULL, "cannot read: %s",
                       r == -FATIA_E_LIMIT ? "file larger than 64 MiB" : fatia_strerror(r));
        fatia_buf_release(&b);
        return r;
    }
    r = fatia_docset_load_buf(set, path, b.p, b.len, diag);
    fatia_buf_release(&b);
    return r;
}

static bool manifest_name(const char *name)
{
    return fatia_str_has_suffix(name, ".yaml") || fatia_str_has_suffix(name, ".yml") ||
           fatia_str_has_suffix(name, ".json");
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_dir(struct fatia_docset *set, const char *path, bool recursive,
                    struct fatia_diag *diag)
{
    FATIA_VEC(char *) names = {0};
    struct dirent *de;
    DIR *dir;
    int r = 0, worst = 0;

    dir = opendir(path);
    if (!dir) {
        r = -errno;
        fatia_diag_add(diag, FATIA_DIAG_ERROR, path, 0, 0, NULL, NULL, "cannot open: %s",
                       fatia_strerror(r));
        return r;
    }
    while ((de = readdir(dir))) {
        char *full;
        struct stat st;
        if (de->d_name[0] == '.')
            continue;
        if (asprintf(&full, "%s%s%s", path, fatia_str_has_suffix(path, "/") ? "" : "/",
                     de->d_name) < 0) {
            r = -ENOMEM;
            break;
        }
        if (stat(full, &st) < 0 ||
            (S_ISDIR(st.st_mode) ? !recursive : !manifest_name(de->d_name))) {
            free(full);
            continue;
        }
        if (FATIA_VEC_PUSH(&names, full) < 0) {
            free(full);
            r = -ENOMEM;
            break;
        }
    }
    closedir(dir);
    if (names.n)
        qsort(names.v, names.n, sizeof(*names.v), cmp_names);
    for (size_t i = 0; r == 0 && i < names.n; i++) {
        int k = fatia_docset_load_path(set, names.v[i], recursive, diag);
        if (k == -ENOMEM)
            r = k;
        else if (k < 0 && !worst)
            worst = k;
    }
    for (size_t i = 0; i < names.n; i++)
        free(names.v[i]);
    FATIA_VEC_RELEASE(&names);
    return r < 0 ? r : worst;
}

int fatia_docset_load_path(struct fatia_docset *set, const char *path, bool recursive,
                           struct fatia_diag *diag)
{
    struct stat st;

    if (strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return load_dir(set, path, recursive, diag);
    return load_file(set, path, diag);
}

int fatia_yaml_parse(const char *data, size_t n, json_t **ret, char *why, size_t why_n)
{
    struct loader l = {0};
    yaml_event_t ev;
    json_t *root = NULL;
    int r, docs = 0;

    if (!yaml_parser_initialize(&l.parser))
        return -ENOMEM;
    yaml_parser_set_input_string(&l.parser, (const unsigned char *)data, n);
    for (;;) {
        r = next_event(&l, &ev);
        if (r < 0)
            goto out;
        if (ev.type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (ev.type != YAML_DOCUMENT_START_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        yaml_event_delete(&ev);
        if (++docs > 1) {
            r = -FATIA_E_PARSE;
            snprintf(why, why_n, "expected one document, found several");
            goto out;
        }
        r = next_event(&l, &ev);
        if (r < 0)
            goto out;
        r = build(&l, &ev, 0, &root);
        if (r < 0)
            goto out;
        r = next_event(&l, &ev);
        if (r < 0)
            goto out;
        yaml_event_delete(&ev);
    }
    if (!root) {
        r = -FATIA_E_PARSE;
        snprintf(why, why_n, "empty document");
        goto out;
    }
    *ret = root;
    root = NULL;
    r = 0;
out:
    if (l.err_code && why)
        snprintf(why, why_n, "line %u column %u: %s", l.err_pos.line, l.err_pos.col, l.err);
    json_decref(root);
    loader_release(&l);
    return r;
}
