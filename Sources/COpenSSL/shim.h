// COpenSSL: the system OpenSSL 3 (Debian: libssl-dev), imported only by HTTP2Transport and JSONWebToken.
#ifndef C_OPENSSL_SHIM_H
#define C_OPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#endif
