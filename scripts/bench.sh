#!/usr/bin/env bash
# make bench: every figure of docs/architecture.md beside its baseline, measured in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./internal/cmd/bench "$@"
# Overload: httpentry's adaptive admission against bare net/http, go-zero's shedder
# and kratos's BBR, open-loop at 0.5×–4× capacity; then admission's cost below
# capacity; then the same shape over gRPC, bare grpc-go against grpcentry. The peers
# live in their own module (bench/peers), out of go.mod.
(cd bench/peers && go run . && go run . -idle 5 && go run . -grpc)
