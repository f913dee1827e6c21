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
# The same overload as a vegeta-shaped client fleet sees it: a goroutine and a
# keep-alive connection per outstanding request, server and generator pinned to a
# core each, 10 s at 0.1× (unloaded), 0.5× and 4×; bare net/http is the baseline.
go run ./internal/cmd/openloop
