#ifndef FLOWSYNC_CLIBSSL_SHIM_H
#define FLOWSYNC_CLIBSSL_SHIM_H
// OpenSSL 3 (Debian's libssl-dev) for TLS on the libuv loop through memory BIOs
// (Sources/FlowSyncTLS). Only what Swift cannot import is here: OpenSSL's
// function-like macros (SSL_CTX_set_min_proto_version, BIO_get_mem_ptr, …) and its
// 64-bit option bits, each as a prefixed static inline function. Errors are read and
// translated once, in Swift (TLSError+OpenSSL.swift).
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <openssl/buffer.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <string.h>
#include <time.h>

static inline long CLibSSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long CLibSSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_max_proto_version(ctx, version);
}
static inline long CLibSSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long CLibSSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
static inline long CLibSSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline long CLibSSL_BIO_get_mem_ptr(BIO *bio, BUF_MEM **out) { return BIO_get_mem_ptr(bio, out); }
static inline long CLibSSL_BIO_set_mem_eof_return(BIO *bio, int value) { return BIO_set_mem_eof_return(bio, value); }
static inline int CLibSSL_ERR_GET_LIB(unsigned long code) { return ERR_GET_LIB(code); }
static inline int CLibSSL_ERR_GET_REASON(unsigned long code) { return ERR_GET_REASON(code); }

// Option bits (SSL_OP_BIT(n) is a cast Swift does not import).
static inline uint64_t CLibSSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }
static inline uint64_t CLibSSL_OP_NO_TICKET(void) { return SSL_OP_NO_TICKET; }
static inline uint64_t CLibSSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }
static inline uint64_t CLibSSL_OP_CIPHER_SERVER_PREFERENCE(void) { return SSL_OP_CIPHER_SERVER_PREFERENCE; }

// XN_FLAG_RFC2253 is an OR of casts Swift does not import.
static inline unsigned long CLibSSL_XN_FLAG_RFC2253(void) { return XN_FLAG_RFC2253; }

// The certificate's notAfter as seconds since 1970 (0 when it cannot be read).
static inline double CLibSSL_X509_notAfter_unix(const X509 *certificate) {
    const ASN1_TIME *t = X509_get0_notAfter(certificate);
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1) return 0;
    return (double)timegm(&tm);
}
#endif
