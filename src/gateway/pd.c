/*
 * gateway/pd.c: roles and the P/D decider (see pd.h; llm-d's
 * pkg/epp/framework/plugins/scheduling/profilehandler/disagg). The profiles themselves run in the
 * gateway's forward() with the ordinary scorers (sched.c), once over the decode pods and, when
 * this decider says so, once over the prefill pods.
 */
#include "base/compat.h"

#include "gateway/pd.h"

#include "base/error.h"

void fatia_pd_config_default(struct fatia_pd_config *c)
{
    c->decider = FATIA_PD_DECIDER_PREFIX;
    c->non_cached_tokens = 256;
    c->block_tokens = 16;
}

int fatia_pd_decider_parse(const char *s, enum fatia_pd_decider *ret)
{
    static const char *const names[] = {"prefix-based", "always", "never"};
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(names); i++)
        if (!strcmp(s, names[i])) {
            *ret = (enum fatia_pd_decider)i;
            return 0;
        }
    return -EINVAL;
}

const char *fatia_pd_decider_name(enum fatia_pd_decider d)
{
    switch (d) {
    case FATIA_PD_DECIDER_PREFIX:
        return "prefix-based";
    case FATIA_PD_DECIDER_ALWAYS:
        return "always";
    case FATIA_PD_DECIDER_NEVER:
        return "never";
    }
    return "?";
}

enum fatia_pd_role fatia_pd_role_of(const char *label)
{
    return label && !strcmp(label, "prefill") ? FATIA_PD_ROLE_PREFILL : FATIA_PD_ROLE_DECODE;
}

bool fatia_pd_disaggregate(const struct fatia_pd_config *c, uint64_t input_tokens,
                           uint32_t cached_blocks)
{
    uint64_t cached = (uint64_t)cached_blocks * (c->block_tokens ? c->block_tokens : 16);
    uint64_t non_cached = input_tokens > cached ? input_tokens - cached : 0;

    switch (c->decider) {
    case FATIA_PD_DECIDER_ALWAYS:
        return true;
    case FATIA_PD_DECIDER_NEVER:
        return false;
    case FATIA_PD_DECIDER_PREFIX:
        return c->non_cached_tokens > 0 && non_cached >= c->non_cached_tokens;
    }
    return false;
}
