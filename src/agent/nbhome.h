/*
 * agent/nbhome.h: a workbench's persistent home (controller/notebook.c marks its pods with the
 * annotation fatia.dev/notebook-home = the Notebook's name).
 */
#ifndef FATIA_AGENT_NBHOME_H
#define FATIA_AGENT_NBHOME_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define FATIA_AGENT_NB_HOME_ANN "fatia.dev/notebook-home"
#define FATIA_AGENT_NB_SOCKET   ".fatia-jupyter.sock"

/* The home of the workbench pod (POD_DIR/homes/<ns>/<name>) in buf: made (0700, owned by uid:gid
 * when chown_it) if missing. 1: the pod is a workbench's and buf holds its home; 0: it is not
 * (no annotation); a negative code when the annotation is not a DNS label or a directory cannot
 * be made (why says which). */
int fatia_agent_nb_home(const char *pod_dir, const json_t *pod, bool chown_it, uid_t uid, gid_t gid,
                        char *buf, size_t n, char *why, size_t why_n);

/* The proxy's side: the Jupyter socket of workbench ns/name under pod_dir in buf, and in
 * *ret_uid the owner of the namespace's homes directory (the uid the agent gave the namespace,
 * which the socket's server must run as). 0; -EINVAL when ns or name is not a DNS label;
 * -ENOENT (no home yet), -ENOTDIR (not a directory: a link) from lstat. */
int fatia_agent_nb_upstream(const char *pod_dir, const char *ns, const char *name, char *buf,
                            size_t n, uid_t *ret_uid);

/* A workbench in a container (agent/nbaddr.c): the address (in ip) and port of the Jupyter of
 * Notebook ns/name, whose pod <name>-0 runs on this agent in a runc container with a network of
 * its own. 0; -ENOENT: no such pod running here, or it runs as processes or on the host's
 * network (then the home's socket serves); -EINVAL, -ENAMETOOLONG. */
struct fatia_agent;
int fatia_agent_nb_addr(const struct fatia_agent *a, const char *ns, const char *name, char *ip,
                        size_t ip_n, int *ret_port);

#endif
