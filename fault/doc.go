// Package fault holds the errors a user of servicewright matches on, so that every
// package, the user's own among them, can return and inspect them without importing
// the Host.
//
//   - *ConfigError lists every problem of a configuration, each with the field or
//     environment variable it concerns. Constructors return it; nothing was started
//     when it is returned, and a process that gets it exits 78 (EX_CONFIG).
//   - *PanicError is what a recovered panic in user code (an entrypoint method, a
//     hook, a warmup step, a handler) becomes; it names the unit that panicked.
//   - ErrAbandoned marks a call that did not return within its allowance and was left
//     to finish on its own.
//   - Reporter is where errors worth a person's attention go (an error-tracking
//     service); its implementations live in their own packages, beside their SDKs.
//
// The package imports nothing of the module, so it sits at the bottom of the graph.
package fault
