/*
 * agent/satoken.c: the ServiceAccount tokens of the agent's pods, as kubelet's token manager
 * (pkg/kubelet/token/token_manager.go) keeps them for projected serviceAccountToken sources.
 *
 * Model: per pod and audience one token, made by the TokenRequest of the pod's ServiceAccount
 * bound to the pod (boundObjectRef Pod name+uid, so fatiad refuses it once the pod is gone:
 * apiserver/satoken.c), kept in struct apod's sa_tokens {aud: {token, iat, exp}}. A token is
 * renewed once 80 % of its life has passed (kubelet's rule; also after 24 h): the current one
 * is still handed out until the new one arrives, and the agent's tick (refresh_refvols)
 * rewrites the volume then. Only one request per pod and audience is in flight.
 *
 * Invariants: the token is never logged or put in an Event; a request's answer finds its pod
 * by uid (the pod may be gone by then: the answer is dropped). A pod waits for its first token
 * quietly in ContainerCreating (agent.c's token_wait: nothing is prepared yet) and starts as
 * soon as it arrives; a refused request (the ServiceAccount does not exist yet) is asked again
 * on the agent's storage tick (2 s).
 *
 * Rejected: one token per ServiceAccount shared by its pods (a token must die with its pod).
 */
#include "base/compat.h"

#include "agent/agent_int.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "client/client.h"

#define TOKEN_MAX_AGE (24 * 3600 * FATIA_USEC_PER_SEC)

struct tok_req {
    struct fatia_agent *a;
    char uid[128];
    char aud[512];
};

static void token_done(void *arg, const struct fatia_client_result *res)
{
    struct tok_req *q = arg;
    struct apod *p = fatia_agent_pod(q->a, q->uid);
    const json_t *st = json_object_get(res->obj, "status");
    const char *tok = fatia_json_str(st, "token");
    json_t *e = p && p->sa_tokens ? json_object_get(p->sa_tokens, q->aud) : NULL;

    if (!e) {
        fatia_free(q);
        return;
    }
    json_object_del(e, "inflight");
    if (res->code == 201 && tok) {
        const json_t *exp = json_object_get(json_object_get(res->obj, "spec"), "expirationSeconds");
        fatia_usec_t now = fatia_now_real_usec();
        json_object_set_new(e, "token", json_string(tok));
        json_object_set_new(e, "iat", json_integer((json_int_t)now));
        json_object_set_new(
            e, "exp",
            json_integer((json_int_t)(now + json_integer_value(exp) * FATIA_USEC_PER_SEC)));
        fatia_agent_sa_token_arrived(q->a, p);
    } else if (!json_is_true(json_object_get(e, "warned"))) {
        fatia_warn("agent: pod %s/%s: no service account token yet: %s", p->ns, p->name,
                   fatia_json_str(res->status, "message") ? fatia_json_str(res->status, "message")
                                                          : "refused");
        json_object_set_new(e, "warned", json_true());
    }
    fatia_free(q);
}

static void request(struct fatia_agent *a, struct apod *p, json_t *e, const char *aud,
                    int64_t exp_s)
{
    const json_t *spec = json_object_get(p->pod, "spec");
    const char *sa = fatia_json_str(spec, "serviceAccountName");
    struct tok_req *q;
    json_t *body;

    if (json_is_true(json_object_get(e, "inflight")) || !a->client->ops->token_request)
        return;
    q = fatia_calloc(1, sizeof(*q));
    body = json_pack("{s:s,s:s,s:{s:I,s:{s:s,s:s,s:s,s:s}}}", "apiVersion",
                     "authentication.k8s.io/v1", "kind", "TokenRequest", "spec",
                     "expirationSeconds", (json_int_t)exp_s, "boundObjectRef", "apiVersion", "v1",
                     "kind", "Pod", "name", p->name, "uid", p->uid);
    if (body && aud && *aud)
        json_object_set_new(json_object_get(body, "spec"), "audiences", json_pack("[s]", aud));
    if (!q || !body) {
        fatia_free(q);
        json_decref(body);
        return;
    }
    q->a = a;
    snprintf(q->uid, sizeof(q->uid), "%s", p->uid);
    snprintf(q->aud, sizeof(q->aud), "%s", aud ? aud : "");
    if (a->client->ops->token_request(a->client, p->ns, sa && *sa ? sa : "default", body,
                                      token_done, q) < 0)
        fatia_free(q);
    else
        json_object_set_new(e, "inflight", json_true());
    json_decref(body);
}

const char *fatia_agent_sa_token(struct fatia_agent *a, struct apod *p, const char *aud,
                                 int64_t exp_s)
{
    fatia_usec_t now = fatia_now_real_usec(), iat, exp;
    const char *tok;
    json_t *e;

    if (!p->pod || strlen(aud ? aud : "") >= 512)
        return NULL;
    if (!p->sa_tokens && !(p->sa_tokens = json_object()))
        return NULL;
    e = json_object_get(p->sa_tokens, aud ? aud : "");
    if (!e) {
        e = json_object();
        if (!e || json_object_set_new(p->sa_tokens, aud ? aud : "", e) < 0)
            return NULL;
    }
    tok = fatia_json_str(e, "token");
    iat = (fatia_usec_t)json_integer_value(json_object_get(e, "iat"));
    exp = (fatia_usec_t)json_integer_value(json_object_get(e, "exp"));
    if (tok && now < iat + (exp - iat) / 10 * 8 && now < iat + TOKEN_MAX_AGE)
        return tok;
    request(a, p, e, aud, exp_s);
    return tok && now < exp ? tok : NULL;
}
