/*
 * agent/imgpull.h: image pulls and unpacks off the event loop (imgpull.c): one worker thread
 * that brings a pod's images into the node's store (image.h) by their pull policies and unpacks
 * them for the pod's host id range, while the loop keeps serving the API and the pod waits in
 * ContainerCreating, as kubelet's image puller.
 */
#ifndef FATIA_AGENT_IMGPULL_H
#define FATIA_AGENT_IMGPULL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct fatia_image_store;
struct fatia_image_puller;

/* Called on the loop's thread when the job of key (a pod uid) ended: r 0 (every image stored
 * and unpacked), -ENOENT (an image absent under pull policy Never: ErrImageNeverPull), -EIO (a
 * pull failed: ErrImagePull, why has skopeo's message), another -errno (unpacking). */
typedef void (*fatia_image_puller_done_fn)(void *arg, const char *key, int r, const char *why);

/* The worker for the store s (which must outlive it). 0 or -errno. */
int fatia_image_puller_new(struct event_base *base, const struct fatia_image_store *s,
                           fatia_image_puller_done_fn done, void *arg,
                           struct fatia_image_puller **ret);

/* Whether every image of items is ready without the worker: stored, unpacked for host_base,
 * and no item asks for a pull (policy Always). items: [{"image", "policy"}]. Reads the store's
 * index only (no tool runs). */
bool fatia_image_puller_ready(const struct fatia_image_store *s, const json_t *items,
                              uint32_t host_base);

/* Queues a job for key: items [{"image", "policy" (Always|IfNotPresent|Never), "insecure"
 * (bool)}], pulled with auth_file (NULL or "": the node's none) and unpacked for host_base.
 * A key already queued or running is refused (-EBUSY). 0 or -errno. */
int fatia_image_puller_submit(struct fatia_image_puller *q, const char *key, const json_t *items,
                              const char *auth_file, uint32_t host_base);

/* Whether key's job is queued or running. */
bool fatia_image_puller_pending(const struct fatia_image_puller *q, const char *key);

/* Whether any job is queued or running (the image GC waits: umoci gc beside a skopeo copy into
 * the same layout could remove the blobs being written). */
bool fatia_image_puller_busy(const struct fatia_image_puller *q);

/* Ends the worker: queued jobs are dropped, no callback runs after this; a tool still running
 * finishes on the detached thread, which frees what it shares with the loop last. */
void fatia_image_puller_free(struct fatia_image_puller *q);

#endif
