// CNGHTTP2: the system libnghttp2 (Debian: libnghttp2-dev), imported only by HTTP2Session.
#ifndef C_NGHTTP2_SHIM_H
#define C_NGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>
#endif
