/*
 * agent/image.h: the node's image store: an OCI image layout under the pod directory
 * (POD_DIR/images/oci, tags as org.opencontainers.image.ref.name annotations, as skopeo writes
 * them) and the rootfs unpacked from it once per image and host id range
 * (POD_DIR/images/rootfs/<manifest hex>-<host base>, owned by that range: umoci --uid-map).
 *
 * `fatia image load|ls|rm` (src/cli/cmd_image.c) and the agent use it; nothing of it lives on
 * the store's filesystem.
 */
#ifndef FATIA_AGENT_IMAGE_H
#define FATIA_AGENT_IMAGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fatia_image_store {
    char dir[1200];    /* POD_DIR/images */
    char layout[1300]; /* dir/oci */
    char umoci[512], skopeo[512];
};

/* The store under pod_dir (made if missing). 0 or -errno. */
int fatia_image_store_open(struct fatia_image_store *s, const char *pod_dir);

/* The name an image reference is stored under: as given, with ":latest" added when it has
 * neither tag nor digest. */
void fatia_image_ref_normalize(const char *ref, char *buf, size_t n);

/* A stored image: its manifest digest ("sha256:..."), its config ("config" of the image config
 * JSON, new reference, may be an empty object) and, when host_base is given (not UINT32_MAX), the
 * rootfs unpacked for that range (unpacked now when missing). -ENOENT (not in the store: why
 * says so), -FATIA_E_PARSE (a broken layout), -errno. */
int fatia_image_get(const struct fatia_image_store *s, const char *ref, uint32_t host_base,
                    char *ret_digest, size_t digest_n, json_t **ret_config, char *ret_rootfs,
                    size_t rootfs_n, char *why, size_t why_n);

/* Whether ref is stored and already unpacked for host_base (no tool runs: the index and one
 * stat). */
bool fatia_image_unpacked(const struct fatia_image_store *s, const char *ref, uint32_t host_base);

/* Loads an archive (docker-archive or oci-archive, as `podman load`) into the store under the
 * name(s) it carries, or as `name` when given. Prints nothing; why on failure. */
int fatia_image_load(const struct fatia_image_store *s, const char *file, const char *name,
                     char *why, size_t why_n);

/* Pulls ref from its registry (skopeo copy docker://REF, docker.io rules for short names) into
 * the store under ref's normalized name: the tag is resolved to a digest at the registry, and
 * blobs already stored are not fetched again. auth_file: a containers-auth.json / docker
 * config.json with the registry's credentials, or NULL; insecure: plain HTTP or an unverified
 * certificate allowed (a registry the admin listed). 0, or -EIO with skopeo's message in why. */
int fatia_image_pull(const struct fatia_image_store *s, const char *ref, const char *auth_file,
                     bool insecure, char *why, size_t why_n);

/* The store's garbage collection, as kubelet's image GC: when the store holds more than max_bytes
 * (0: no limit) or its filesystem is used above high_pct percent (0: not checked), the images no
 * running container uses (in_use: digests "sha256:...") are removed, least recently used first
 * (a rootfs is touched each time a container starts from it), until the store is under max_bytes
 * and the filesystem under low_pct. *ret_removed: how many names went. 0 or -errno. */
int fatia_image_gc(const struct fatia_image_store *s, uint64_t max_bytes, unsigned high_pct,
                   unsigned low_pct, const json_t *in_use, unsigned *ret_removed);

/* Bytes under the store's directory (blocks, links not followed). */
uint64_t fatia_image_store_bytes(const struct fatia_image_store *s);

/* The stored images: [{"name", "digest", "size"}] (new reference). */
int fatia_image_list(const struct fatia_image_store *s, json_t **ret);

/* Removes a name (and, once unnamed, its unpacked rootfs copies; blobs by umoci gc). */
int fatia_image_remove(const struct fatia_image_store *s, const char *ref, char *why, size_t why_n);

#endif
