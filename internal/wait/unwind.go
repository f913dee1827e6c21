package wait

import "time"

// AbandonAfter is the one grace the framework gives a call whose ctx is done before
// abandoning it, still running. It lives here, at the bottom of the graph, so that
// every package waiting on a call can use it without importing hooks; users read it
// as hooks.AbandonAfter, which is this value.
const AbandonAfter = time.Second
