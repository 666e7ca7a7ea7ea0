// Sources/NATSClient/NATSClient.swift - the module: what it offers, its threading model, what libnats does on reconnects
//
// NATSClient is a small Swift API over libnats 3.4 (the NATS C client; Debian libnats-dev) for core NATS
// and JetStream. It is the only module that imports CNATS; its API is `package`, for this package's
// modules (the trip relay).
//
// What it offers
// - `NATSConnection.connect(_:logger:)`: one server or a cluster, a connection name, reconnecting forever
//   with a wait, connect timeout; `events()` (connected, disconnected, reconnected, closed, asynchronous
//   errors), `state`, `close()`, `drain(timeout:)`; core `publish`, `subscribe` + `next(timeout:)`, `request`.
// - `connection.jetStream()`: `createOrUpdateStream`, `streamInfo`, `deleteStream`, `purgeStream`;
//   `createOrUpdateConsumer`, `consumerInfo`, `deleteConsumer`; `publish(_:)` with a `Nats-Msg-Id` returning
//   the `PubAck`; `publish(batch:)`, asynchronous publishing with a bound on acks in flight; pull
//   subscriptions with `fetch(batch:timeout:)`; `orderedConsumer` and `readStream` to read a stream in order.
// - `JetStream.Message`: subject, data, headers, metadata (sequences, deliveries, timestamp) and `ack()`,
//   `ackSync()`, `nak(delay:)`, `inProgress()`, `term()`.
// - One error type, `NATSError`: the libnats status, the JetStream error code, the text.
//
// Threading model
// - libnats runs threads of its own per connection: a reader, a flusher, a pinger, a thread that delivers
//   connection events, and timer and delivery threads for subscriptions and JetStream. Everything that
//   arrives from the network is parsed there, by libnats.
// - Every libnats call that can block (connect, flush, publish, JetStream API requests, publish with an
//   ack, fetch, next message, acks, close, destroying objects) runs on this module's own threads,
//   `BlockingThreadPool`: the async methods submit the call there and suspend the calling task. Nothing
//   blocks Swift's cooperative thread pool or another library's event loop. The pool grows when all its
//   threads are busy (a long fetch never holds up a publish) and shrinks when idle.
// - The calls do not observe task cancellation; each ends at its own timeout (fetch, next, requests).
// - Callbacks from libnats' threads (connection events, asynchronous errors, asynchronous publish acks)
//   only look up their target by number (`CallbackRegistry`), update state under a mutex and resume a
//   continuation or yield to an `AsyncStream`; they never call back into libnats' blocking API and never
//   run user code on libnats' threads.
// - Every public type is Sendable. A received JetStream message keeps its subscription and connection
//   alive, so it can be acked from any task or thread for as long as it exists; acks of one message are
//   serialized.
//
// Reconnects (what libnats does)
// - When the connection breaks (server killed, network error, missed pings), libnats reports
//   `disconnected` and tries the known servers in turn: the configured ones plus those the cluster
//   announced. After trying every server it waits the reconnect wait (plus jitter) and starts over, forever
//   under `Reconnect.forever(wait:)`. On success it reports `reconnected(server:)`, re-creates every
//   subscription on the new server and sends what was published meanwhile (kept in the reconnect buffer,
//   8 MiB by default; beyond it publishes fail with `insufficientBuffer`).
// - Requests pending across a reconnect (JetStream API calls, synchronous publishes, confirmed acks) wait
//   for their timeout unless `failRequestsOnDisconnect` is set. Asynchronous publishes whose ack does not
//   come back in time fail with `timeout`; with a `Nats-Msg-Id`, publishing them again is safe.
// - Pull subscriptions survive a reconnect, but a fetch whose pull request was lost with the old server
//   returns empty at its timeout; the next fetch goes to the new one. Ordered consumers re-create their
//   server-side consumer from the next sequence after a reconnect, a gap or missed heartbeats.
// - `closed` is final: after it nothing reconnects.
//
// This file holds no code; the types live in the files named after them.
