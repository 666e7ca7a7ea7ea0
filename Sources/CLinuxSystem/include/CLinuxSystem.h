// CLinuxSystem: the Linux calls Swift's Glibc module does not export
// (epoll, eventfd, accept4) for HTTP2Transport's event loop, and stdio setup
// for the executables.
#ifndef C_LINUX_SYSTEM_H
#define C_LINUX_SYSTEM_H

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

/* accept4 needs _GNU_SOURCE in the including file; this wrapper keeps that out of Swift. */
int cls_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);

/* Makes stdout line-buffered (Swift 6 cannot touch the `stdout` global safely). */
void cls_line_buffer_stdout(void);

#endif
