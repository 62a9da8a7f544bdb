/*
 * apiserver/tls.h: fatiad's TLS: a self-signed certificate made on first start, the server
 * context, and the certificate authority data kubeconfigs carry.
 *
 * Why TLS on loopback: kubectl (client-go) sends credentials only over TLS; over plain HTTP it
 * drops the bearer token silently (kubernetes/kubectl#744), so token authentication needs TLS
 * even on 127.0.0.1. The certificate is its own CA (CA:TRUE, serverAuth, ECDSA P-256, ten years)
 * and names localhost, 127.0.0.1, ::1 and the address fatiad listens on; kubeconfigs trust it
 * through certificate-authority-data. A certificate that does not name the listen address is
 * made again (the kubeconfig is rewritten at every start anyway). It also names the in-cluster
 * Service's names (kubernetes, kubernetes.default, kubernetes.default.svc[.cluster.local]): pods
 * reach the API as https://kubernetes.default.svc (agent/apiproxy.c), and a certificate made
 * before it named them is made again.
 */
#ifndef FATIA_APISERVER_TLS_H
#define FATIA_APISERVER_TLS_H

#include <stddef.h>

#define FATIA_TLS_SVC_NAME "kubernetes.default.svc"

/* Makes cert_path and key_path (0600) unless they exist and cover host. 0, or -errno /
 * -FATIA_E_CORRUPT with why set. */
int fatia_tls_ensure(const char *cert_path, const char *key_path, const char *host, char *why,
                     size_t why_n);

/* A server context (an SSL_CTX) for the pair; free with fatia_tls_ctx_free. */
int fatia_tls_server_ctx(const char *cert_path, const char *key_path, void **ret, char *why,
                         size_t why_n);
void fatia_tls_ctx_free(void *ctx);

/* The base64 of the certificate file (PEM), as kubeconfig's certificate-authority-data. The
 * caller frees *ret with fatia_free. */
int fatia_tls_ca_data(const char *cert_path, char **ret);

#endif
