// CNATS: the system libnats, the NATS C client (Debian: libnats-dev), imported only by NATSClient.
#ifndef C_NATS_SHIM_H
#define C_NATS_SHIM_H
#include <nats/nats.h>
#endif
