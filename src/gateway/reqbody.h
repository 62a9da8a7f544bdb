/*
 * gateway/reqbody.h: the fields of an OpenAI-compatible request body that routing needs, found
 * without building a JSON tree and without copying.
 *
 * The scanner walks the top-level object of the body once, skipping every value it does not need
 * (strings, numbers, literals, nested objects and arrays, nested at most FATIA_REQBODY_MAX_DEPTH
 * deep) and records views of the ones it does:
 *
 *     model        string contents, still JSON-escaped
 *     prompt       /v1/completions: string contents (escaped), or the raw text of an array
 *     messages     /v1/chat/completions: the raw text of the array, brackets included
 *     input        /v1/embeddings: string contents or raw array text
 *     cache_salt   string contents (escaped)
 *     stream       true / false
 *     max_tokens   (or max_completion_tokens) integer, -1 when absent
 *
 * The prefix the gateway hashes is the raw bytes of prompt, messages or input: GIE serialises
 * chat messages to JSON before hashing them; the gateway hashes the client's own serialisation,
 * which is as stable from one turn to the next and costs no re-encoding. Escapes are not undone,
 * so a prompt hashes the same whenever a client encodes it the same way.
 *
 * The scanner validates enough JSON to find these fields reliably (balanced brackets, terminated
 * strings, a single top-level object); full validation is the model server's job.
 */
#ifndef FATIA_GATEWAY_REQBODY_H
#define FATIA_GATEWAY_REQBODY_H

#include "base/compat.h"

#include "base/str.h"

#define FATIA_REQBODY_MAX_DEPTH 64

struct fatia_reqbody {
    struct fatia_str model;
    struct fatia_str prompt; /* whichever of prompt, messages, input was present */
    struct fatia_str cache_salt;
    bool has_model;
    bool prompt_is_string; /* prompt was a JSON string (view = its contents) */
    bool stream;
    int64_t max_tokens; /* -1 when absent */
};

/* Scans body[0..n). Returns 0, or -FATIA_E_PARSE with a short reason in why (e.g. "unterminated
 * string at byte 1234"). Views point into body. */
int fatia_reqbody_scan(const char *body, size_t n, struct fatia_reqbody *ret, char *why,
                       size_t why_n);

#endif
