// CZlib: the system zlib (Debian: zlib1g-dev), imported only by GRPCCompression.
// zlib spells its init calls as function-like macros (they pass the library version
// and the stream size for a consistency check), which Swift cannot import; the
// static inline wrappers below give them callable names.
#ifndef C_ZLIB_SHIM_H
#define C_ZLIB_SHIM_H
#include <zlib.h>

/* windowBits 15 (a 32 KiB window) + 16 writes a gzip wrapper (RFC 1952); 15 alone a zlib one (RFC 1950). */
static inline int js_deflateInit2(z_streamp stream, int level, int windowBits) {
  return deflateInit2(stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
}

static inline int js_inflateInit2(z_streamp stream, int windowBits) {
  return inflateInit2(stream, windowBits);
}

#endif
