#!/usr/bin/env bash
# Installs what the tests need and this machine lacks: Debian packages (as root) and
# the Go modules. With CI=true anything that cannot be installed fails the run.
set -euo pipefail

need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v haproxy >/dev/null || need+=(haproxy)
command -v kcat >/dev/null || need+=(kcat)
command -v wrk >/dev/null || need+=(wrk)
command -v curl >/dev/null || need+=(curl)
# ip and tc build the network namespaces of the leadership partition test; prlimit
# runs the example under a descriptor limit.
{ command -v ip >/dev/null && command -v tc >/dev/null; } || need+=(iproute2)
command -v prlimit >/dev/null || need+=(util-linux)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
# etcd (3.4) runs the etcd lock's cluster and the kube-apiserver's storage.
command -v etcd >/dev/null || need+=(etcd-server)

if [ ${#need[@]} -gt 0 ]; then
  echo "deps: installing ${need[*]}"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || true
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  elif [ "${CI:-}" = true ]; then
    echo "deps: missing ${need[*]} and cannot install them (not root or no apt-get)" >&2
    exit 1
  else
    echo "deps: missing ${need[*]}; tests that need them will be skipped (install them, or run as root)" >&2
  fi
fi

# A package service started by apt is not what the tests use; they start their own.
if command -v systemctl >/dev/null 2>&1; then systemctl stop redis-server haproxy etcd >/dev/null 2>&1 || true; fi

go mod download

# The kube-apiserver the Kubernetes Lease lock's tests run against: built once per
# version into a cache outside the repository (about 20 minutes the first time).
if ! "$(dirname "$0")/kubeapiserver.sh" >/dev/null; then
  echo "deps: kube-apiserver could not be built" >&2
  if [ "${CI:-}" = true ]; then exit 1; fi
fi
