// Package hookrun runs the application's hooks and drain hooks for the Host: start
// hooks fail-fast, shutdown hooks best-effort and time-boxed, drain hooks in order
// under a shared budget. The types it runs live in package hooks.
package hookrun
