// COpenSSL: the system OpenSSL 3 (Debian: libssl-dev), imported only by HTTP2Transport and JSONWebToken.
// OpenSSL spells several calls as function-like macros, which Swift cannot import;
// the static inline wrappers below give them callable names.
#ifndef C_OPENSSL_SHIM_H
#define C_OPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/bio.h>
#include <string.h>

static inline long js_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
  return SSL_set_tlsext_host_name(ssl, name);
}

static inline long js_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
  return SSL_CTX_set_min_proto_version(ctx, version);
}

static inline long js_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
  return SSL_CTX_set_mode(ctx, mode);
}

static inline long js_BIO_pending(BIO *bio) { return (long)BIO_ctrl_pending(bio); }

/* Refuses TLS 1.2 renegotiation, asked for by either side (RFC 9113 section 9.2.1 forbids it
   under HTTP/2). SSL_OP_NO_RENEGOTIATION is a macro Swift cannot import. */
static inline void js_SSL_CTX_disable_renegotiation(SSL_CTX *ctx) {
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
}

/* A PEM password callback that fails, so an encrypted private key is an error instead of
   OpenSSL's default: a passphrase prompt on the controlling terminal. */
static inline int js_refuse_password(char *buf, int size, int rwflag, void *userdata) {
  (void)buf; (void)size; (void)rwflag; (void)userdata;
  return -1;
}

static inline void js_SSL_CTX_refuse_passwords(SSL_CTX *ctx) {
  SSL_CTX_set_default_passwd_cb(ctx, js_refuse_password);
}

/* The ALPN protocol list "h2" in wire form (length-prefixed). */
static const unsigned char js_alpn_h2[] = { 2, 'h', '2' };

static inline int js_SSL_CTX_set_alpn_h2(SSL_CTX *ctx) {
  return SSL_CTX_set_alpn_protos(ctx, js_alpn_h2, sizeof(js_alpn_h2));
}

/* Server side: select "h2" if the client offers it; otherwise fail the handshake. */
static inline int js_alpn_select_h2(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                                    const unsigned char *in, unsigned int inlen, void *arg) {
  (void)ssl; (void)arg;
  unsigned char *selected = NULL;
  if (SSL_select_next_proto(&selected, outlen, js_alpn_h2, sizeof(js_alpn_h2), in, inlen)
      != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

static inline void js_SSL_CTX_select_alpn_h2(SSL_CTX *ctx) {
  SSL_CTX_set_alpn_select_cb(ctx, js_alpn_select_h2, NULL);
}

#endif
