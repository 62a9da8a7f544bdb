/*
 * cli/cmd_image.c: `fatia image load|ls|rm`: the node's image store (agent/image.h), the one the
 * node agent runs containers from, as `kind load` / `podman load` fill theirs.
 *
 * Model. The store is a directory (POD_DIR/images: an OCI layout plus unpacked rootfs copies)
 * that the agent reads when a pod starts; this command writes it directly, with fatiad running
 * or not (skopeo and umoci take the layout's lock themselves). No API call: images are a node's
 * state, not a cluster object.
 *
 * Rejected: an API endpoint for uploads (the archive is already on the node's disk, and a
 * tenant has no business filling a node's disk with images).
 */
#include "base/compat.h"

#include <getopt.h>
#include <stdio.h>

#include "agent/image.h"
#include "base/error.h"
#include "base/json.h"
#include "cli/cli.h"
#include "cli/commands.h"

static const char image_usage[] =
    "Usage: fatia image load [--name NAME] FILE\n"
    "       fatia image ls\n"
    "       fatia image rm NAME\n"
    "\n"
    "The node's image store, from which the node agent runs containers (--agent runtime=oci).\n"
    "load reads a docker-archive (docker save, podman save) or an oci-archive (skopeo copy\n"
    "... oci-archive:FILE) and stores it as NAME (\":latest\" added when NAME has no tag).\n"
    "\n"
    "Options:\n"
    "  -d, --data-dir DIR     fatiad's data directory (default .fatia)\n"
    "  -p, --pod-dir DIR      the agent's pod directory when fatiad has --agent pod-dir\n"
    "                         (default DATA/agent)\n"
    "  -n, --name NAME        the name to store the image under (load)\n"
    "\n"
    "Example:\n"
    "  fatia image load --name fatia.dev/busybox:1 busybox.tar\n";

static int run_image(int argc, char **argv)
{
    static const struct option opts[] = {{"data-dir", required_argument, NULL, 'd'},
                                         {"pod-dir", required_argument, NULL, 'p'},
                                         {"name", required_argument, NULL, 'n'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *data = ".fatia", *pod_dir = NULL, *name = NULL, *verb;
    struct fatia_image_store st;
    char dir[4096], why[1500] = "";
    int c, r;

    while ((c = getopt_long(argc, argv, "d:p:n:h", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            data = optarg;
            break;
        case 'p':
            pod_dir = optarg;
            break;
        case 'n':
            name = optarg;
            break;
        case 'h':
            return fatia_cli_help(&fatia_cmd_image);
        default:
            return fatia_cli_usage_error(&fatia_cmd_image, "unknown option");
        }
    }
    if (optind >= argc)
        return fatia_cli_usage_error(&fatia_cmd_image, "expected load, ls or rm");
    verb = argv[optind++];
    if (pod_dir)
        snprintf(dir, sizeof(dir), "%s", pod_dir);
    else
        snprintf(dir, sizeof(dir), "%s/agent", data);
    r = fatia_image_store_open(&st, dir);
    if (r < 0) {
        fprintf(stderr, "fatia image: cannot open the image store in '%s': %s\n", dir,
                fatia_strerror(r));
        return FATIA_EXIT_FAIL;
    }
    if (!strcmp(verb, "load")) {
        if (optind != argc - 1)
            return fatia_cli_usage_error(&fatia_cmd_image, "load: expected one FILE");
        r = fatia_image_load(&st, argv[optind], name, why, sizeof(why));
        if (r < 0) {
            fprintf(stderr, "fatia image load: %s\n", why);
            return FATIA_EXIT_FAIL;
        }
        {
            char norm[600];
            fatia_image_ref_normalize(name, norm, sizeof(norm));
            printf("Loaded image: %s\n", norm);
        }
        return FATIA_EXIT_OK;
    }
    if (!strcmp(verb, "ls")) {
        json_t *list, *e;
        size_t i;
        if (optind != argc)
            return fatia_cli_usage_error(&fatia_cmd_image, "ls: no arguments");
        r = fatia_image_list(&st, &list);
        if (r < 0) {
            fprintf(stderr, "fatia image ls: %s\n", fatia_strerror(r));
            return FATIA_EXIT_FAIL;
        }
        printf("%-50s %-20s %s\n", "IMAGE", "ID", "SIZE");
        json_array_foreach(list, i, e)
        {
            const char *d = fatia_json_str(e, "digest");
            int64_t size = 0;
            (void)fatia_json_int(e, "size", &size);
            printf("%-50s %-20.19s %lld\n", fatia_json_str(e, "name"),
                   d && strlen(d) > 7 ? d + 7 : "", (long long)size);
        }
        json_decref(list);
        return FATIA_EXIT_OK;
    }
    if (!strcmp(verb, "rm")) {
        if (optind != argc - 1)
            return fatia_cli_usage_error(&fatia_cmd_image, "rm: expected one NAME");
        r = fatia_image_remove(&st, argv[optind], why, sizeof(why));
        if (r < 0) {
            fprintf(stderr, "fatia image rm: %s\n", why);
            return FATIA_EXIT_FAIL;
        }
        printf("Deleted: %s\n", argv[optind]);
        return FATIA_EXIT_OK;
    }
    return fatia_cli_usage_error(&fatia_cmd_image, "expected load, ls or rm");
}

const struct fatia_cli_cmd fatia_cmd_image = {
    .name = "image",
    .summary = "load, list and remove the node's container images",
    .usage = image_usage,
    .run = run_image,
};
