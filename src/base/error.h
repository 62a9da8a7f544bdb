/*
 * base/error.h: fatia's one error convention.
 *
 * Every fallible function returns int: 0 (or a non-negative count) on success, a negative code on
 * failure. A code is either -errno (-ENOMEM, -ENOENT, -EINVAL, ...) or minus one of fatia's own codes
 * (return -FATIA_E_NOFIT, exactly as return -ENOMEM), which start at 1000 so they never collide
 * with errno values. Outputs are the last
 * parameters, named ret_*, and are written only on success.
 *
 * FATIA_ERRNO_MAP generates the enum, fatia_err_name() ("FATIA_E_NOFIT") and fatia_strerror()
 * (a message for people). Both also know the errno values through strerrordesc_np/strerrorname_np.
 * The HTTP status of each code is in apiserver/status.c, not here: base knows nothing of HTTP.
 */
#ifndef FATIA_BASE_ERROR_H
#define FATIA_BASE_ERROR_H

#include <errno.h>

/* XX(NAME, value, "message") */
#define FATIA_ERRNO_MAP(XX)                                \
    XX(PARSE, 1000, "malformed input")                     \
    XX(INVALID, 1001, "object failed validation")          \
    XX(NOFIT, 1002, "request does not fit")                \
    XX(CONFLICT, 1003, "conflicting update")               \
    XX(UNSUPPORTED, 1004, "not supported")                 \
    XX(LIMIT, 1005, "limit exceeded")                      \
    XX(NODRIVER, 1006, "GPU driver library not available") \
    XX(DRIVER, 1007, "GPU driver call failed")             \
    XX(GONE, 1008, "resource version too old")             \
    XX(FORBIDDEN, 1009, "forbidden")                       \
    XX(UNAUTHORIZED, 1010, "unauthorized")                 \
    XX(EXISTS, 1011, "already exists")                     \
    XX(CORRUPT, 1012, "stored data is corrupt")            \
    XX(COST, 1013, "evaluation cost limit exceeded")       \
    XX(TYPE, 1014, "type error")                           \
    XX(EVAL, 1015, "expression evaluation failed")

enum fatia_err {
#define FATIA_ERR_ENUM(name, value, msg) FATIA_E_##name = (value),
    FATIA_ERRNO_MAP(FATIA_ERR_ENUM)
#undef FATIA_ERR_ENUM
};

/* A message for people: "out of memory", "request does not fit". Never NULL; never allocates.
 * Accepts negative codes (the usual) and positive errno values alike. */
const char *fatia_strerror(int err);

/* The symbolic name: "ENOMEM", "FATIA_E_NOFIT"; "E?" for an unknown code. Never NULL. */
const char *fatia_err_name(int err);

/* Turns a libc failure (-1 with errno set) into -errno; returns r unchanged otherwise. */
static inline int fatia_negerrno(int r)
{
    return r < 0 ? -errno : r;
}

#endif
