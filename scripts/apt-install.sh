#!/usr/bin/env bash
# Sourced by the install-*-deps.sh scripts: apt_install PACKAGE... installs with apt-get, as root or
# through sudo, after an `apt-get update` (a new machine's package lists can be empty).
apt_install() {
  echo "installing missing packages: $*"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "need root (or sudo) to apt-get install $*" >&2; exit 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "$@"
}
