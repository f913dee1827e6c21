package doccheck

// The README's code fragments, verbatim, inside just enough code to compile. Change a
// fragment here and in the docs together; TestDocsAreCompiled holds them equal.
// The functions are compiled, never called.
//lint:file-ignore U1000 documentation fragments are type-checked here, not run

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/admission"
	"github.com/servicewright/servicewright/entrypoint/cronentry"
	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/host/hosttest"
	"github.com/servicewright/servicewright/host/otlp"
	"github.com/servicewright/servicewright/kafkakit"
	"github.com/servicewright/servicewright/leader"
	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/rediskit"
)

// The custom entrypoint of the README is host.Example_customEntrypoint.

// --- Hooks and drain hooks

func migrate(context.Context) error                 { return nil }
func announce(context.Context) error                { return nil }
func flush(context.Context) error                   { return nil }
func report(context.Context) error                  { return nil }
func handOver(context.Context, time.Duration) error { return nil }
func createIndexes(context.Context) error           { return nil }
func digest() string                                { return "" }

func hooksSnippet(spec *host.AppSpec) {
	lc := &hooks.Registry{}
	lc.AddPreStart("migrate", migrate)         // before Bind; fail-fast
	lc.AddPostStart("announce", announce)      // after readiness turns true; fail-fast
	lc.AddPreShutdown("flush-outbox", flush)   // after entrypoints stopped, container still open; best-effort
	lc.AddPostShutdown("final-report", report) // after the container closed; best-effort
	lc.AddDrainHook(hooks.DrainHook{           // while still serving, before Drain
		Name: "hand-over", Order: 10, MaxDuration: 5 * time.Second,
		Run: func(ctx context.Context, allowed time.Duration) error { return handOver(ctx, allowed) },
	})
	spec.Lifecycle = lc
}

// --- fx wiring

type DB struct{}

func (*DB) Ping(context.Context) error { return nil }
func newDB() *DB                       { return &DB{} }

type Outbox struct{}

func (*Outbox) Flush(context.Context) error                   { return nil }
func (*Outbox) HandOver(context.Context, time.Duration) error { return nil }

func newConsumer(db *DB) (*entrypoint.Loop, error) {
	return entrypoint.NewLoop(entrypoint.LoopConfig{Name: "consumer", Every: time.Second}, db.Ping)
}

func fxSnippet(spec *host.AppSpec) {
	spec.Container = hostfx.Container(
		fx.Provide(newDB),
		hostfx.Provide(host.Registration{Order: 20}, newConsumer), // an entrypoint, bound at order 20
		hostfx.Warmup(func(db *DB) host.Step { return host.Step{Name: "ping-db", Start: db.Ping} }),
		hostfx.Hook(hooks.PreShutdown, "flush", func(o *Outbox) hooks.Func { return o.Flush }),
		hostfx.DrainHook(hooks.DrainHook{Name: "hand-over", MaxDuration: 5 * time.Second},
			func(o *Outbox) func(context.Context, time.Duration) error { return o.HandOver }),
	)
}

func otlpSnippet(spec host.AppSpec) {
	host.Main(spec, otlp.FromEnv()) // package host/otlp
}

// --- Kafka

type Order struct{ ID string }

type orderStore struct{}

func (orderStore) Upsert(context.Context, Order) error { return nil }

func kafkaSnippet(store orderStore, db health.Check, log *zap.Logger, reg prometheus.Registerer, tp trace.TracerProvider) {
	consumer, err := kafkaentry.New(kafkaentry.Config{
		Brokers:   []string{"localhost:9092"},
		GroupID:   "orders",
		Topics:    []string{"orders"},
		Retry:     kafkaentry.Retry{Attempts: 5},       // poison: jittered backoff between tries
		OnFailure: kafkaentry.DeadLetter("orders.dlq"), // or kafkaentry.StopEntrypoint()
		Outage:    kafkaentry.Outage{Check: db.Health}, // the store down: pause, never dead-letter
	}, func(ctx context.Context, msg kafka.Message) error {
		var o Order
		if err := json.Unmarshal(msg.Value, &o); err != nil {
			return fmt.Errorf("%w: %v", kafkaentry.ErrUndecodable, err) // straight to the DLQ
		}
		return store.Upsert(ctx, o) // a lost connection pauses the partition
	}, kafkaentry.WithTelemetry(entrypoint.Telemetry{Logger: log, Registerer: reg, TracerProvider: tp}))
	// host.Registration{Entrypoint: consumer}; consumer is also a readiness check (Health).
	_, _ = consumer, err
}

func producerSnippet(w http.ResponseWriter, r *http.Request, tp trace.TracerProvider, order []byte) {
	producer, err := kafkakit.NewProducer(kafkakit.ProducerConfig{
		Brokers: []string{"localhost:9092"},
		Topic:   "orders", // WriteTimeout: 3s by default
	}, kafkakit.WithTelemetry(entrypoint.Telemetry{TracerProvider: tp}))
	if err != nil {
		return
	}
	defer producer.Close()
	// In a handler: the request's trace goes on in the message's headers.
	if err := producer.WriteMessages(r.Context(), kafka.Message{Value: order}); err != nil {
		w.Header().Set("Retry-After", "3")
		http.Error(w, "try again", http.StatusServiceUnavailable) // within WriteTimeout
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// --- Cron

func sendReport(context.Context, time.Time) error { return nil }

func cronSnippet(lock lock.Lock, instanceID string) {
	sched, err := cronentry.New(cronentry.Config{Name: "cron"}, []cronentry.Job{{
		Name:         "daily-report",
		Schedule:     "CRON_TZ=Europe/Paris 0 30 9 * * *", // 09:30 Paris time, with seconds
		Jitter:       30 * time.Second,
		Overlap:      cronentry.OverlapSkip, // or OverlapQueue, OverlapAllow
		OncePerFleet: cronentry.OncePerFleet(lock, instanceID, time.Hour),
		Run: func(ctx context.Context, tick cronentry.Tick) error {
			return sendReport(ctx, tick.Scheduled) // ctx is cancelled at Stop or MaxRunTime
		},
	}})
	// host.Registration{Entrypoint: sched} — its marks come from sched.Marks()
	_, _ = sched, err
}

// --- Leadership

type fencedStore struct{}

func (fencedStore) Claim(context.Context, uint64) (bool, error)         { return true, nil }
func (fencedStore) Fence(context.Context) (uint64, error)               { return 0, nil }
func (fencedStore) Write(context.Context, uint64, string) (bool, error) { return true, nil }

func leaderSnippet(client redis.UniversalClient, instanceID string, store fencedStore, log *zap.Logger, reg prometheus.Registerer) error {
	lk, err := rediskit.NewLock(client, rediskit.LockConfig{}) // or pgkit.NewLock, lock.NewMemory()
	if err != nil {
		return err
	}
	l, err := leader.New(leader.Config{
		Lock: lk, Key: "digest-publisher", Owner: instanceID,
		Claim: func(ctx context.Context, t *leader.Term) (bool, error) {
			return store.Claim(ctx, t.Token) // UPDATE … SET fence = $t WHERE fence < $t
		},
		FenceFloor: store.Fence, RequiresFenceAdvance: true,
	}, func(ctx context.Context, term *leader.Term) error {
		for term.Live() { // false as soon as the soft deadline passes, even right after a pause
			if ok, err := store.Write(ctx, term.Token, digest()); err != nil || !ok {
				return err // refused: a newer leader has written
			}
			select {
			case <-term.Ended():
				return nil
			case <-time.After(time.Second):
			}
		}
		return nil
	}, leader.WithTelemetry(entrypoint.Telemetry{Logger: log, Registerer: reg}))
	// host.Registration{Entrypoint: l} — it declares its own marks (RequiresLongRunning)
	_ = l
	return err
}

// --- Fleet posture

func fleetSnippet(spec *host.AppSpec) {
	spec.Profile = fleet.Fleet // Single (default), Fleet, Serverless
	spec.Warmups = []host.Step{{Name: "create-indexes", Start: createIndexes,
		Marks: fleet.Marks{MutatesSharedState: true}}} // ConfigError under Fleet: not guarded
}

// --- Testing your service

func hosttestSnippet(t *testing.T, spec host.AppSpec) {
	synctest.Test(t, func(t *testing.T) {
		x := hosttest.Start(t, spec)
		x.WaitStage(host.StageServe)
		x.Stop()
		if err := x.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}

func overloadServer(mux *http.ServeMux) (*httpentry.Server, error) {
	return httpentry.New(httpentry.Config{Addr: ":8080"}, mux,
		httpentry.WithCritical("POST /payments/{id}/confirm"),        // counted, never refused
		httpentry.WithExempt("GET /events"),                          // outside the limiter
		httpentry.WithRouteClass("POST /orders", "PUT /orders/{id}"), // a limit of their own
		httpentry.WithAdmission(admission.Config{MaxLimit: 500}),
	)
}
