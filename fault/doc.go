// Package fault holds what every package of servicewright shares about failure, so
// that each package, the user's own among them, can return and inspect it without
// importing the Host. A package's own sentinels (host.ErrShutdownTimeout,
// lock.ErrNotHeld, …) live beside what returns them, and each one's text begins with
// its package's name and a colon ("host: shutdown cleanup failed"), as net/http's do.
//
//   - *ConfigError lists every problem of a configuration, each with the field or
//     environment variable it concerns, and a process that gets it exits 78
//     (EX_CONFIG). Constructors return it, and then nothing was started. It is also
//     returned later, by what can only check its configuration once it meets the
//     world — an entrypoint's Bind (a Leadership that must advance its fence on a
//     lock that cannot, after warmup), a lock's Acquire given an empty key, the Host
//     at pre_start for a hook registered during startup: what was started by then
//     is undone by the orderly exit, and the error still means "fix the
//     configuration, do not retry".
//   - *PanicError is what a recovered panic in user code (an entrypoint method, a
//     hook, a warmup step, a handler) becomes; it names the unit that panicked.
//   - ErrAbandoned marks a call that did not return within its allowance and was left
//     to finish on its own; ErrInterrupted, a task stopped before its work was done.
//   - Permanent marks a failure retrying cannot fix; IsPermanent finds the mark.
//   - Secret is a string that prints as "[secret]" wherever it is formatted.
//   - Reporter is where errors worth a person's attention go (an error-tracking
//     service); its implementations live in their own packages, beside their SDKs.
//
// The package imports nothing of the module, so it sits at the bottom of the graph.
package fault
