package doccheck

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/segmentio/kafka-go"
	"google.golang.org/grpc"

	"github.com/servicewright/servicewright/entrypoint/cronentry"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/kafkakit"
	"github.com/servicewright/servicewright/leader"
	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/outbox"
)

type metric struct{ name, typ, labels, help string }

// metrics builds (never runs) a Host that serves one entrypoint of each kind, with
// both credentials of the probe port set so that their metrics exist too, and
// reads every collector registered with its registry. A vector with no series yet
// is not in a Gather, so the collectors are read from the registry itself and
// asked to Describe themselves; the type is that of the vector, or of what a
// collector's Collect writes.
func metrics() ([]metric, error) {
	h, err := httpentry.New(httpentry.Config{Addr: "127.0.0.1:0"}, http.NotFoundHandler())
	if err != nil {
		return nil, err
	}
	g, err := grpcentry.New(grpcentry.Config{Addr: "127.0.0.1:0"}, func(*grpc.Server) {})
	if err != nil {
		return nil, err
	}
	c, err := cronentry.New(cronentry.Config{}, []cronentry.Job{{Name: "job", Schedule: "@every 1h",
		Run: func(context.Context, cronentry.Tick) error { return nil }}})
	if err != nil {
		return nil, err
	}
	k, err := kafkaentry.New(kafkaentry.Config{Brokers: []string{"127.0.0.1:9"}, GroupID: "group", Topics: []string{"topic"}},
		func(context.Context, kafka.Message) error { return nil })
	if err != nil {
		return nil, err
	}
	l, err := leader.New(leader.Config{Lock: lock.NewMemory(), Key: "key", Owner: "owner"},
		func(ctx context.Context, _ *leader.Term) error { <-ctx.Done(); return nil })
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(context.Background(), "postgres://user@127.0.0.1:9/db")
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	p, err := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: []string{"127.0.0.1:9"}})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	box, err := outbox.New("Outbox", "outbox")
	if err != nil {
		return nil, err
	}
	r, err := outbox.NewRelay(box, pool, p, outbox.RelayConfig{})
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	token := strings.Repeat("0123456789abcdef", 4)
	env := func(name string) (string, bool) {
		if strings.HasSuffix(name, "_TOKEN") {
			return token, true
		}
		return "", false
	}
	spec := host.AppSpec{ServiceName: "reference", Telemetry: host.TelemetryConfig{Registry: reg},
		Entrypoints: []host.Registration{{Entrypoint: h}, {Entrypoint: g}, {Entrypoint: c}, {Entrypoint: k},
			{Entrypoint: l}, {Entrypoint: r}}}
	if _, err := host.New(spec, host.WithEnv(env)); err != nil {
		return nil, err
	}
	return describe(reg)
}

// describe reads the collectors of reg (its unexported map: a Registry offers no
// other way to list what it holds) and what each describes.
func describe(reg *prometheus.Registry) ([]metric, error) {
	field := reflect.ValueOf(reg).Elem().FieldByName("collectorsByID")
	if !field.IsValid() {
		return nil, fmt.Errorf("prometheus.Registry has no collectorsByID: update describe for this client_golang")
	}
	byID := reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem()
	seen := map[string]metric{}
	for it := byID.MapRange(); it.Next(); {
		c := it.Value().Interface().(prometheus.Collector)
		typ := typeOf(c)
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m, err := parseDesc(d.String())
			if err != nil {
				return nil, err
			}
			if strings.HasPrefix(m.name, "go_") || strings.HasPrefix(m.name, "process_") {
				continue
			}
			m.typ = typ[m.name]
			if m.typ == "" {
				m.typ = typ[""]
			}
			if old, ok := seen[m.name]; ok && old.labels != m.labels {
				m.labels = old.labels + "; " + m.labels
			}
			seen[m.name] = m
		}
	}
	out := make([]metric, 0, len(seen))
	for _, m := range seen {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// typeOf returns the type of each metric c collects, by name, "" for a vector's.
func typeOf(c prometheus.Collector) map[string]string {
	c = unwrap(c)
	switch c.(type) {
	case *prometheus.CounterVec:
		return map[string]string{"": "counter"}
	case *prometheus.GaugeVec:
		return map[string]string{"": "gauge"}
	case *prometheus.HistogramVec:
		return map[string]string{"": "histogram"}
	case *prometheus.SummaryVec:
		return map[string]string{"": "summary"}
	}
	out := map[string]string{}
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	for m := range ch {
		var pb dto.Metric
		if m.Write(&pb) != nil {
			continue
		}
		name, err := parseDesc(m.Desc().String())
		if err != nil {
			continue
		}
		switch {
		case pb.Counter != nil:
			out[name.name] = "counter"
		case pb.Gauge != nil:
			out[name.name] = "gauge"
		case pb.Histogram != nil:
			out[name.name] = "histogram"
		case pb.Summary != nil:
			out[name.name] = "summary"
		default:
			out[name.name] = "untyped"
		}
	}
	return out
}

// unwrap returns the collector prometheus.WrapRegistererWith wrapped.
func unwrap(c prometheus.Collector) prometheus.Collector {
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return c
	}
	f := v.Elem().FieldByName("wrappedCollector")
	if !f.IsValid() {
		return c
	}
	inner := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(prometheus.Collector)
	return unwrap(inner)
}

// parseDesc reads a Desc's String: fqName, help, unit, constLabels, variableLabels.
func parseDesc(s string) (metric, error) {
	var m metric
	rest, ok := strings.CutPrefix(s, `Desc{fqName: `)
	if !ok {
		return m, fmt.Errorf("unexpected Desc %q", s)
	}
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return m, fmt.Errorf("parse %q: %w", s, err)
	}
	m.name, _ = strconv.Unquote(q)
	rest, _ = strings.CutPrefix(rest[len(q):], ", help: ")
	if q, err = strconv.QuotedPrefix(rest); err != nil {
		return m, fmt.Errorf("parse %q: %w", s, err)
	}
	m.help, _ = strconv.Unquote(q)
	rest = rest[len(q):]
	_, rest, _ = strings.Cut(rest, "constLabels: {")
	consts, rest, _ := strings.Cut(rest, "}, variableLabels: {")
	vars := strings.TrimSuffix(rest, "}}")
	var labels []string
	for _, kv := range strings.Split(consts, ",") {
		if k, _, ok := strings.Cut(kv, "="); ok {
			labels = append(labels, "`"+k+"`")
		}
	}
	for _, v := range strings.Split(vars, ",") {
		if v != "" {
			labels = append(labels, "`"+v+"`")
		}
	}
	sort.Strings(labels)
	m.labels = strings.Join(labels, ", ")
	return m, nil
}
