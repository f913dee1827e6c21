// Package freshclone holds the newcomer's test: clone the repository, build the
// example, start it on embedded defaults, run the README's curl lines against it, stop
// it with SIGTERM and expect exit 0. It has no code of its own.
package freshclone
