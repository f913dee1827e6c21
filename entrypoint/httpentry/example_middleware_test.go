package httpentry_test

import (
	"fmt"
	"log"
	"net/http"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint/httpentry"
)

// requireJSON is a user's middleware: it answers a POST that is not JSON itself.
func requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want JSON", http.StatusUnsupportedMediaType)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// A Server with a request id, a sampled access log and a middleware of the user's;
// the handler logs with the request's id. The block is docs/http.md's.
func ExampleWithMiddleware() {
	logger := zap.NewNop()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		logger.Info("order received", zap.String("request_id", httpentry.RequestID(r.Context())))
	})
	api, err := httpentry.New(httpentry.Config{Addr: ":8080"}, mux,
		httpentry.WithRequestID(), // X-Request-Id: kept when well formed, made otherwise
		httpentry.WithAccessLog(httpentry.AccessLog{Every: 100, Headers: []string{"User-Agent"}}),
		httpentry.WithMiddleware(requireJSON), // inside admission, recovery, metrics and the span
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(api.Name())

	_, err = httpentry.New(httpentry.Config{}, mux, httpentry.WithMiddleware(nil))
	fmt.Println(err)
	// Output:
	// http
	// invalid configuration (1 problem): WithMiddleware: middleware 1 of 1 is nil
}
