#!/usr/bin/env bash
# What `make bench` needs beyond `make test`: h2load (Debian nghttp2-client) and nghttpd
# (nghttp2-server) for the raw HTTP/2 ceiling. apt-get only when missing, `apt-get update` first.
set -euo pipefail

missing=()
command -v h2load >/dev/null 2>&1 || missing+=(nghttp2-client)
command -v nghttpd >/dev/null 2>&1 || [ -x /usr/sbin/nghttpd ] || missing+=(nghttp2-server)

if [ ${#missing[@]} -eq 0 ]; then
  echo "benchmark tools present: $(h2load --version | head -1)"
  exit 0
fi

. "$(dirname "$0")/apt-install.sh"
apt_install "${missing[@]}"
