// Package wait holds the waiting primitives every package of the module shares, so
// that each is written once: an interruptible sleep, a bounded wait for a channel, a
// jittered exponential backoff, a uniform jitter, a goroutine group whose Wait can
// give up, and the tail of an entrypoint's Serve. The grace after which a call whose
// ctx is done is abandoned, AbandonAfter, lives here so that no package imports hooks
// for it; users read it as hooks.AbandonAfter and count it in their worst case.
//
// None of them reads a clock other than the time package's, so all of them run
// under testing/synctest.
package wait
