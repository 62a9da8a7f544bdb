/*
 * model/doc_emit.c: YAML output of jansson trees (fatia_yaml_dump, declared in doc.h).
 *
 * libyaml's emitter picks the scalar style; a string that would read back as something else
 * under doc.c's resolution ("true", "123", "", "null", "yes") is marked not plain-implicit, which
 * makes the emitter quote it, so dump-then-load gives the same tree.
 */
#include "base/compat.h"

#include <yaml.h>

#include "base/error.h"
#include "base/json.h"
#include "model/doc.h"

static int emit_cb(void *data, unsigned char *buffer, size_t size)
{
    return fatia_buf_append(data, buffer, size) == 0;
}

static bool reads_as_string(const char *s, size_t n)
{
    json_t *v = NULL;
    char why[64];
    bool ok;

    /* "<<" reads as a string but a plain "<<" key is a YAML merge key: quote it */
    if (n == 0 || memchr(s, '\n', n) || (n == 2 && s[0] == '<' && s[1] == '<'))
        return false;
    /* Reuse the loader's rules through a one-scalar parse, so the two are always in step. */
    if (fatia_yaml_parse(s, n, &v, why, sizeof(why)) < 0)
        return false;
    ok = json_is_string(v) && strlen(json_string_value(v)) == n &&
         memcmp(json_string_value(v), s, n) == 0;
    json_decref(v);
    return ok;
}

static int emit(yaml_emitter_t *em, const json_t *v, int depth)
{
    yaml_event_t ev;
    const char *k;
    json_t *c;
    size_t i;
    char num[64];

    if (depth > FATIA_DOC_MAX_DEPTH)
        return -FATIA_E_LIMIT;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
        if (!yaml_emitter_emit(em, &ev))
            return -ENOMEM;
        json_object_foreach((json_t *)v, k, c)
        {
            bool plain = reads_as_string(k, strlen(k));
            yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)k, (int)strlen(k), plain,
                                         1, YAML_ANY_SCALAR_STYLE);
            if (!yaml_emitter_emit(em, &ev))
                return -ENOMEM;
            if (emit(em, c, depth + 1) < 0)
                return -ENOMEM;
        }
        yaml_mapping_end_event_initialize(&ev);
        break;
    case JSON_ARRAY:
        yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
        if (!yaml_emitter_emit(em, &ev))
            return -ENOMEM;
        json_array_foreach(v, i, c)
        {
            if (emit(em, c, depth + 1) < 0)
                return -ENOMEM;
        }
        yaml_sequence_end_event_initialize(&ev);
        break;
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        bool multiline = memchr(s, '\n', n) != NULL;
        yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)n,
                                     reads_as_string(s, n), 1,
                                     multiline ? YAML_LITERAL_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE);
        break;
    }
    case JSON_INTEGER:
    case JSON_REAL:
        fatia_json_number_text(v, num, sizeof(num));
        /* a real stays a real when read back: 2.0, not 2 */
        if (json_is_real(v) && !strpbrk(num, ".eE"))
            snprintf(num + strlen(num), sizeof(num) - strlen(num), ".0");
        yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)num, (int)strlen(num), 1, 0,
                                     YAML_PLAIN_SCALAR_STYLE);
        break;
    case JSON_TRUE:
    case JSON_FALSE:
    case JSON_NULL: {
        const char *s = json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null";
        yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 0,
                                     YAML_PLAIN_SCALAR_STYLE);
        break;
    }
    }
    return yaml_emitter_emit(em, &ev) ? 0 : -ENOMEM;
}

int fatia_yaml_dump(const json_t *v, struct fatia_buf *out)
{
    yaml_emitter_t em;
    yaml_event_t ev;
    size_t before = out->len;
    int r = -ENOMEM;

    if (!yaml_emitter_initialize(&em))
        return -ENOMEM;
    yaml_emitter_set_output(&em, emit_cb, out);
    yaml_emitter_set_unicode(&em, 1);
    yaml_emitter_set_width(&em, -1);
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    if (!yaml_emitter_emit(&em, &ev))
        goto out;
    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
    if (!yaml_emitter_emit(&em, &ev))
        goto out;
    r = emit(&em, v, 0);
    if (r < 0)
        goto out;
    r = -ENOMEM;
    yaml_document_end_event_initialize(&ev, 1);
    if (!yaml_emitter_emit(&em, &ev))
        goto out;
    yaml_stream_end_event_initialize(&ev);
    if (!yaml_emitter_emit(&em, &ev) || !yaml_emitter_flush(&em))
        goto out;
    r = 0;
out:
    yaml_emitter_delete(&em);
    if (r < 0)
        fatia_buf_truncate(out, before);
    return r;
}
