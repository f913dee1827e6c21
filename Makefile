# servicewright — the two commands are `make run` and `make test`.
GO      ?= go
PKGS    ?= ./...
# The example embeds a development Kafka broker only when built with -tags devbroker:
# make run and make test ask for it; a plain go build (production) links none of it.
export GOFLAGS := -buildvcs=false -tags=devbroker

.PHONY: run test check bench lint deps build fleet-demo generate

## run: start the example "orders" service on embedded defaults (Ctrl+C stops it gracefully)
run:
	$(GO) run ./cmd/example

## test: install what is missing, then run every test with -race (services start inside the tests)
# The end-to-end tests (internal/e2e: the built example behind HAProxy, SIGKILL and
# SIGSTOP of a leader) run after the other packages rather than beside one of them,
# whose own services would share the two cores.
PROC    := github.com/servicewright/servicewright/internal/e2e
test: deps lint
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list $(PKGS) | grep -vx '$(PROC)')
	@if $(GO) list $(PKGS) | grep -qx '$(PROC)'; then \
		echo $(GO) test -race -count=1 -timeout 40m $(PROC); \
		$(GO) test -race -count=1 -timeout 40m $(PROC); fi
	$(GO) test -run='^$$' -fuzz='^FuzzNoSecret$$' -fuzztime=15s ./internal/nosecret

## bench: the figures of docs/architecture.md, each beside its baseline from the same run
bench: deps
	bash scripts/bench.sh

## check: the inner loop — lint and the short unit tests, no apt, no process tests
check: lint
	$(GO) test -short -count=1 $$($(GO) list $(PKGS) | grep -vx '$(PROC)')

## lint: gofmt check, go vet and staticcheck (pinned, installed once into a cache)
STATICCHECK_VERSION := v0.8.2
TOOLDIR     ?= $(HOME)/.cache/servicewright/tools/staticcheck-$(STATICCHECK_VERSION)
STATICCHECK := $(TOOLDIR)/staticcheck
lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	GOFLAGS=-buildvcs=false $(GO) vet ./cmd/example
	GOFLAGS="-buildvcs=false -tags=devbroker,e2e" $(GO) vet ./cmd/example
	$(STATICCHECK) $(PKGS)

$(STATICCHECK):
	GOFLAGS= GOBIN=$(TOOLDIR) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## deps: apt packages (as root) and Go modules
deps:
	bash scripts/deps.sh

build:
	$(GO) build $(PKGS)

## fleet-demo: three replicas + HAProxy + Redis + PostgreSQL + a Kafka-protocol broker, a rolling restart under load
fleet-demo: deps
	$(GO) run ./internal/cmd/fleetdemo

## generate: the example's gRPC code, cmd/example/proto/ into cmd/example/api/ (buf, protoc-gen-go, protoc-gen-go-grpc at pinned versions; no protoc)
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.0
BUF_VERSION                := v1.75.0
TOOLBIN := $(shell $(GO) env GOPATH)/bin
generate:
	GOFLAGS= $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOFLAGS= $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	GOFLAGS= $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	cd cmd/example && PATH="$(TOOLBIN):$$PATH" buf lint
	cd cmd/example && PATH="$(TOOLBIN):$$PATH" buf generate
