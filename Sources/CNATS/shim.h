// CNATS: the system libnats, the NATS C client (Debian: libnats-dev), imported only by NATSClient.
#ifndef C_NATS_SHIM_H
#define C_NATS_SHIM_H
#include <nats/nats.h>

// Two functions libnats 3.x exports but does not declare in nats.h, used by NATSClient's JetStreamPublisher
// to publish a message whose header block it encoded itself (one allocation, no header hash), with a reply
// subject of its own. Their signatures are libnats' (src/msg.h, src/conn.h), unchanged across 3.x.

/// Makes a message from `buf`, whose first `hdrLen` bytes are an encoded header block (`NATS/1.0\r\n...`)
/// and the rest the payload; copies everything into one allocation. Destroy it with natsMsg_Destroy.
natsStatus natsMsg_create(natsMsg **newMsg, const char *subject, int subjLen, const char *reply, int replyLen,
                          const char *buf, int bufLen, int hdrLen);

/// Writes `msg` (reply: `reply`, or the message's own when NULL) into the connection's buffer and kicks the
/// flusher (or flushes at once with `directFlush`); the message stays the caller's.
natsStatus natsConn_publish(natsConnection *nc, natsMsg *msg, const char *reply, bool directFlush);
#endif
