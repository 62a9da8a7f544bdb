/*
 * apiserver/tls.c: self-signed certificate and TLS server context (see tls.h), with OpenSSL 3.
 *
 * The key is written first to a temporary file created 0600 and renamed into place, then the
 * certificate: a crash between the two leaves a key without a certificate, which the next start
 * treats as missing and makes both again.
 */
#include "base/compat.h"

#include "apiserver/tls.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"

#define SVC_SANS                                                    \
    "DNS:kubernetes,DNS:kubernetes.default,DNS:" FATIA_TLS_SVC_NAME \
    ",DNS:kubernetes.default.svc.cluster.local"

static void ssl_why(char *why, size_t n, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "";

    if (e)
        ERR_error_string_n(e, buf, sizeof(buf));
    snprintf(why, n, "%s%s%s", what, buf[0] ? ": " : "", buf);
    ERR_clear_error();
}

static bool cert_covers(const char *cert_path, const char *host)
{
    FILE *f = fopen(cert_path, "re");
    X509 *x;
    bool ok;

    if (!f)
        return false;
    x = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    if (!x)
        return false;
    ok = X509_check_ip_asc(x, host, 0) == 1 || X509_check_host(x, host, 0, 0, NULL) == 1;
    /* expired or expiring within a day: make a new one */
    if (ok && X509_cmp_time(X509_get0_notAfter(x), NULL) <= 0)
        ok = false;
    X509_free(x);
    return ok;
}

static int add_ext(X509 *x, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *ext;
    int r;

    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext)
        return -EINVAL;
    r = X509_add_ext(x, ext, -1) ? 0 : -ENOMEM;
    X509_EXTENSION_free(ext);
    return r;
}

/* Writes PEM produced by fn to path atomically with mode 0600. */
static int write_pem(const char *path, int (*fn)(BIO *b, void *obj), void *obj)
{
    char tmp[4096];
    BIO *b;
    FILE *f;
    int fd, r = 0;

    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
        return -ENAMETOOLONG;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return -ENOMEM;
    }
    b = BIO_new_fp(f, BIO_NOCLOSE);
    if (!b || !fn(b, obj))
        r = -EIO;
    BIO_free(b);
    if (fflush(f) != 0 || fsync(fileno(f)) < 0)
        r = r ? r : -errno;
    fclose(f);
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r < 0)
        unlink(tmp);
    return r;
}

static int pem_key(BIO *b, void *k)
{
    return PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
}

static int pem_cert(BIO *b, void *x)
{
    return PEM_write_bio_X509(b, x);
}

int fatia_tls_ensure(const char *cert_path, const char *key_path, const char *host, char *why,
                     size_t why_n)
{
    EVP_PKEY *key = NULL;
    X509 *x = NULL;
    X509_NAME *name;
    BIGNUM *serial = NULL;
    char san[512];
    bool ip;
    int r = -ENOMEM;

    /* kubernetes.default.svc: what pods reach the API by (agent/apiproxy.c), as upstream's
     * serving certificate names the in-cluster Service */
    if (access(key_path, R_OK) == 0 && cert_covers(cert_path, host) &&
        cert_covers(cert_path, FATIA_TLS_SVC_NAME))
        return 0;
    ip = strchr(host, ':') || strspn(host, "0123456789.") == strlen(host);
    if (strcmp(host, "127.0.0.1") && strcmp(host, "::1") && strcmp(host, "localhost"))
        snprintf(san, sizeof(san), "DNS:localhost,IP:127.0.0.1,IP:::1,%s,%s%s", SVC_SANS,
                 ip ? "IP:" : "DNS:", host);
    else
        snprintf(san, sizeof(san), "DNS:localhost,IP:127.0.0.1,IP:::1,%s", SVC_SANS);
    key = EVP_EC_gen("P-256");
    x = X509_new();
    serial = BN_new();
    if (!key || !x || !serial) {
        ssl_why(why, why_n, "cannot generate a key");
        goto out_free;
    }
    if (!BN_rand(serial, 120, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) ||
        !BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x)) || !X509_set_version(x, 2) ||
        !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
        !X509_gmtime_adj(X509_getm_notAfter(x), 10L * 365 * 24 * 3600) ||
        !X509_set_pubkey(x, key)) {
        ssl_why(why, why_n, "cannot build the certificate");
        goto out_free;
    }
    name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"fatia", -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"fatiad", -1, -1,
                               0);
    X509_set_issuer_name(x, name);
    if (add_ext(x, NID_basic_constraints, "critical,CA:TRUE") < 0 ||
        add_ext(x, NID_key_usage, "critical,digitalSignature,keyCertSign") < 0 ||
        add_ext(x, NID_ext_key_usage, "serverAuth") < 0 ||
        add_ext(x, NID_subject_key_identifier, "hash") < 0 ||
        add_ext(x, NID_subject_alt_name, san) < 0) {
        ssl_why(why, why_n, "cannot add the certificate's extensions");
        r = -EINVAL;
        goto out_free;
    }
    if (!X509_sign(x, key, EVP_sha256())) {
        ssl_why(why, why_n, "cannot sign the certificate");
        goto out_free;
    }
    r = write_pem(key_path, pem_key, key);
    if (r == 0)
        r = write_pem(cert_path, pem_cert, x);
    if (r < 0)
        snprintf(why, why_n, "cannot write '%s': %s", r == 0 ? cert_path : key_path,
                 fatia_strerror(r));
out_free:
    BN_free(serial);
    X509_free(x);
    EVP_PKEY_free(key);
    return r;
}

int fatia_tls_server_ctx(const char *cert_path, const char *key_path, void **ret, char *why,
                         size_t why_n)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

    if (!ctx) {
        ssl_why(why, why_n, "cannot create a TLS context");
        return -ENOMEM;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_path) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, key_path, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        ssl_why(why, why_n, "cannot load the certificate and key");
        SSL_CTX_free(ctx);
        return -FATIA_E_CORRUPT;
    }
    *ret = ctx;
    return 0;
}

void fatia_tls_ctx_free(void *ctx)
{
    SSL_CTX_free(ctx);
}

int fatia_tls_ca_data(const char *cert_path, char **ret)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    struct fatia_buf in = FATIA_BUF_INIT, out = FATIA_BUF_INIT;
    unsigned char chunk[4096];
    FILE *f = fopen(cert_path, "re");
    size_t n;
    int r = 0;

    if (!f)
        return -errno;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        if ((r = fatia_buf_append(&in, chunk, n)) < 0)
            break;
    fclose(f);
    for (size_t i = 0; r == 0 && i < in.len; i += 3) {
        const unsigned char *p = (const unsigned char *)in.p + i;
        uint32_t v = (uint32_t)p[0] << 16 | (i + 1 < in.len ? (uint32_t)p[1] << 8 : 0) |
                     (i + 2 < in.len ? p[2] : 0);
        char q[4] = {tbl[v >> 18 & 63], tbl[v >> 12 & 63], i + 1 < in.len ? tbl[v >> 6 & 63] : '=',
                     i + 2 < in.len ? tbl[v & 63] : '='};
        r = fatia_buf_append(&out, q, 4);
    }
    fatia_buf_release(&in);
    if (r < 0) {
        fatia_buf_release(&out);
        return r;
    }
    *ret = fatia_buf_steal(&out);
    return *ret ? 0 : -ENOMEM;
}
