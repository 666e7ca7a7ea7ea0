#!/usr/bin/env bash
# Builds tripload's grpc-go client, Benchmarks/.build/go/bin/tripload-go, from Benchmarks/GoClient/main.go
# and Go code that protoc generates from Protos/ at build time (into Benchmarks/.build/go/src, never
# committed). Everything comes from Debian's packages (bookworm: Go 1.19, grpc-go 1.33.3,
# google.golang.org/protobuf 1.28.1), built in GOPATH mode with no module download: apt-get installs what is
# missing (after an `apt-get update`), nothing else is fetched.
#
# Usage: Benchmarks/scripts/build-go-client.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/Benchmarks/.build/go

# golang-github-golang-protobuf-1-5-dev, not the 1.3 that golang-google-grpc-dev pulls in by default: grpc's
# codec marshals through github.com/golang/protobuf, and only 1.5 speaks the APIv2 messages protoc-gen-go writes.
packages=(golang-go golang-google-grpc-dev golang-github-golang-protobuf-1-5-dev golang-google-protobuf-dev
  protobuf-compiler protoc-gen-go protoc-gen-go-grpc)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f '${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  . "$root/scripts/apt-install.sh"
  apt_install "${missing[@]}"
fi

rm -rf "$out/src/tripload"
mkdir -p "$out/src/tripload/client" "$out/bin"
fleet=google/maps/fleetengine/v1
protos=(journeysharing/v1/trip_stream.proto $fleet/fleetengine.proto $fleet/header.proto $fleet/traffic.proto
  $fleet/trips.proto $fleet/trip_api.proto google/type/latlng.proto)
map=Mjourneysharing/v1/trip_stream.proto=tripload/journeysharing,Mgoogle/type/latlng.proto=tripload/latlng
for proto in fleetengine header traffic trips trip_api; do map+=",M$fleet/$proto.proto=tripload/fleetengine"; done
for known in timestamp duration wrappers; do
  map+=",Mgoogle/protobuf/$known.proto=google.golang.org/protobuf/types/known/${known}pb"
done
(cd "$root/Protos" && protoc -I . --go_out="$out/src" --go_opt="paths=import,$map" \
  --go-grpc_out="$out/src" --go-grpc_opt="paths=import,$map" "${protos[@]}")
cp "$root/Benchmarks/GoClient/main.go" "$out/src/tripload/client/"
cd "$out/src/tripload/client"
GOPATH="$out:/usr/share/gocode" GO111MODULE=off GOFLAGS= GOCACHE="$out/cache" go build -o "$out/bin/tripload-go" .
echo "built $out/bin/tripload-go ($(go version | cut -d' ' -f3), grpc-go $(dpkg-query -W -f '${Version}' golang-google-grpc-dev))"
