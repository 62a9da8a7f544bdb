/*
 * agent/shim/main.c: the fatia-shim program (agent/shim.h). A separate program, not a fork of
 * fatiad: fatiad is multi-threaded (the store's writer thread), and a child of a threaded process
 * may only call async-signal-safe functions before exec, while the shim needs malloc, JSON and
 * logging for the whole life of the pod.
 */
#include "base/compat.h"

#include "agent/shim.h"

int main(int argc, char **argv)
{
    return fatia_shim_main(argc, argv);
}
