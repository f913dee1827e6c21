#!/usr/bin/env bash
# Builds the kube-apiserver the Kubernetes Lease lock's tests run against, once per
# version, into a cache directory outside the repository (never committed). It builds
# from tools/kubeapiserver, a module of its own, so the main module's go.mod carries
# none of the server's dependencies. About 20 minutes cold on two cores; nothing when
# the cached binary exists. Prints the binary's path.
set -euo pipefail

version=v1.37.2
cache="${SERVICEWRIGHT_CACHE:-$HOME/.cache/servicewright}"
bin="$cache/kube-apiserver-$version"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi

mkdir -p "$cache"
cd "$(dirname "$0")/../tools/kubeapiserver"
start=$(date +%s)
echo "kube-apiserver: building $version into $bin (about 20 minutes the first time)" >&2
CGO_ENABLED=0 go build -trimpath -o "$bin.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$bin.tmp" "$bin"
echo "kube-apiserver: built in $(( $(date +%s) - start ))s" >&2
echo "$bin"
