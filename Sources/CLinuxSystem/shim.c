// CLinuxSystem: wrappers for calls the Swift Glibc overlay cannot see.
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/socket.h>
#include "CLinuxSystem.h"

int cls_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) {
  return accept4(fd, address, length, flags);
}

void cls_line_buffer_stdout(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
}
