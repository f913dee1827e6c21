// Package etcdkit holds what servicewright needs of etcd, beside the etcd v3 client
// so that the core packages link no driver: a lock.Lock with fencing tokens and
// release notices (Lock), a readiness check (Check), and the parsing of an endpoint
// list (ParseEndpoints). Package etcdfx wires them into a Host's fx container.
//
// Choose etcd for leadership when the platform runs it: a replicated engine, so
// losing one member of three keeps every lease and counter (unlike a single Redis),
// and a graceful hand-over takes one round trip (the release deletes the holder key
// and a watch wakes the other replicas). A crashed leader's lease is held until its
// TTL lapses, in whole seconds. The PostgreSQL lock (package pgkit) frees a crashed
// leader's lease when its connection closes.
package etcdkit
