#!/usr/bin/env bash
# Installs the C libraries the package links (libnghttp2, OpenSSL, zlib, libnats) and pkg-config, and the
# nats-server the NATS tests run, with apt-get, only when they are missing. A new machine's package
# lists can be empty, so `apt-get update` runs first whenever something has to be installed.
set -euo pipefail

missing=()
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
for pair in "libnghttp2:libnghttp2-dev" "openssl:libssl-dev" "zlib:zlib1g-dev" "libnats:libnats-dev"; do
  module=${pair%%:*}
  package=${pair##*:}
  if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists "$module"; then
    missing+=("$package")
  fi
done
command -v nats-server >/dev/null 2>&1 || missing+=(nats-server)

if [ ${#missing[@]} -eq 0 ]; then
  echo "system dependencies present: libnghttp2 $(pkg-config --modversion libnghttp2), openssl $(pkg-config --modversion openssl)," \
    "zlib $(pkg-config --modversion zlib), libnats $(pkg-config --modversion libnats), $(nats-server --version)"
  exit 0
fi

. "$(dirname "$0")/apt-install.sh"
apt_install "${missing[@]}"
