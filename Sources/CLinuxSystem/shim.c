// CLinuxSystem: wrappers for calls the Swift Glibc overlay cannot see.
#define _GNU_SOURCE
#include <sys/socket.h>
#include "CLinuxSystem.h"

int cls_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) {
  return accept4(fd, address, length, flags);
}
