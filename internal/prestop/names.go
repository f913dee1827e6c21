package prestop

// The names a deployment's manifest uses to reach the PreStop endpoint;
// docs/kubernetes.md states them for a user, with the environment variables the Host
// reads the token from (SW_PRESTOP_TOKEN or SW_PRESTOP_TOKEN_FILE).
//
// Path is where the Host's probe listener serves Host.PreStop, for GET and POST: the
// target of a Kubernetes preStop httpGet (the probe port, path /prestop), which must
// send the deployment's token in the Header header. The answer, 200
// {"status":"draining"}, comes once the drain delay has passed and the drain hooks
// have run, or at once when an earlier call (or the shutdown) did them.
//
// The probe port is reachable from the whole pod network, so the path is guarded: a
// request without the token configured, or with no token configured at all, is answered 403 and changes nothing. The probe listener
// serves the path under its one canonical spelling only: "/%70restop", "//prestop"
// and "/prestop/" are 404 there, and a query string changes nothing.
//
// Header is the request header that must carry the token. A header, not a query
// parameter: it stays out of access logs and Referer headers, and a browser sends no
// custom header to another origin without a CORS preflight that the probe listener
// never grants, so an <img> or a form on a page cannot start a drain.
const (
	Path   = "/prestop"
	Header = "X-Servicewright-Prestop"
)

// PprofHeader carries the profiling token to the Host's /debug/pprof, read as the
// PreStop token is, from SW_PPROF_TOKEN or SW_PPROF_TOKEN_FILE. httpentry's access
// log refuses to log it, as it refuses Header.
const PprofHeader = "X-Servicewright-Pprof"
