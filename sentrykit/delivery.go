package sentrykit

import (
	"net/http"
	"sync/atomic"
)

// delivery is the SDK's HTTP transport, counting the requests that did not deliver:
// refused, reset, or answered other than 2xx. The SDK's own transport drops such an
// event after a debug line, so that a Flush against a backend that refuses would
// otherwise report success.
type delivery struct {
	base     http.RoundTripper
	failures atomic.Int64
	last     atomic.Pointer[string]
}

func newDelivery() *delivery {
	return &delivery{base: http.DefaultTransport}
}

func (d *delivery) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := d.base.RoundTrip(req)
	switch {
	case err != nil:
		// Never the request's URL: it carries the DSN's key.
		d.failed(errWithoutURL(err))
	case resp.StatusCode/100 != 2:
		d.failed(resp.Status)
	}
	return resp, err
}

func (d *delivery) failed(why string) {
	d.last.Store(&why)
	d.failures.Add(1)
}

// take returns how many requests failed since the last call, and the last reason.
func (d *delivery) take() (int64, string) {
	n := d.failures.Swap(0)
	if n == 0 {
		return 0, ""
	}
	return n, *d.last.Load()
}

// errWithoutURL is err's message without the URL a *url.Error puts in it.
func errWithoutURL(err error) string {
	type unwrapper interface{ Unwrap() error }
	if u, ok := err.(unwrapper); ok && u.Unwrap() != nil {
		return u.Unwrap().Error()
	}
	return err.Error()
}
