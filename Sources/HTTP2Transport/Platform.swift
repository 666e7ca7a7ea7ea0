// Sources/HTTP2Transport/Platform.swift - where this module runs
//
// The event loop is built on epoll and eventfd, and the rest of the package on this
// module: JourneySharing supports Linux only (Debian 12 and Swift 6.1 or later tested).

#if !os(Linux)
  #error("JourneySharing runs on Linux only: its transport uses epoll and eventfd")
#endif
