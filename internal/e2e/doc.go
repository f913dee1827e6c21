// Package e2e holds the end-to-end tests of the example service: its TestMain builds
// cmd/example with -tags devbroker,e2e (the embedded Kafka-protocol broker and the
// test-only knobs of cmd/example/knobs_e2e.go) and the tests run that binary as real
// processes — single replicas, fleets behind HAProxy, rolling restarts, SIGKILL and
// SIGSTOP of a leader — beside real Redis, PostgreSQL, etcd and kube-apiserver from
// internal/testenv.
//
// The package lives apart from cmd/example so that the example stays a user's
// program (its own tests are unit tests of its knobs, manifests and handlers) and so
// that `make check` can leave these tests out: they take minutes. `make test` runs
// them after every other package, alone on the machine's cores.
//
// Time in these tests is real time on a shared machine. A test waits for an event
// in a log or an answer, never for a duration; a bound on how long something took
// is a generous sanity limit (ten times or more what it takes), and figures worth
// tracking belong in `make bench`.
package e2e
