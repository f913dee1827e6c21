#!/usr/bin/env bash
# make bench: every figure of DESIGN §6 beside its baseline, measured in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./internal/cmd/bench "$@"
