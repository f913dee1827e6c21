package telemetry

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"
)

// The console encoding is for a person at a terminal, or reading a file of such
// output: the fields every line would repeat (the service and the instance) are
// printed once, on the line that starts the service; the level is coloured only when
// the output is a terminal; and the shutdown report is a block with one figure a
// line instead of a single long line.

// ReportMessage is the message of the shutdown report's log entry, which the console
// encoding lays out as a block.
const ReportMessage = "shutdown report"

// constantFields are the fields the Host binds to its logger for every line; the
// console encoding drops them from the logger's context.
var constantFields = []string{"service", "instance"}

// consoleEncoder wraps zap's console encoder. Fields bound to the logger (With) that
// every line would repeat are dropped; fields given to one entry are kept, so a line
// that names the service on purpose still does.
type consoleEncoder struct {
	zapcore.Encoder
}

func newConsoleEncoder(cfg zapcore.EncoderConfig) zapcore.Encoder {
	return consoleEncoder{zapcore.NewConsoleEncoder(cfg)}
}

func (e consoleEncoder) Clone() zapcore.Encoder { return consoleEncoder{e.Encoder.Clone()} }

func (e consoleEncoder) AddString(key, value string) {
	if slices.Contains(constantFields, key) {
		return
	}
	e.Encoder.AddString(key, value)
}

// EncodeEntry writes the shutdown report as a block: its message line, then each of
// its fields indented on a line of its own. Every other entry is zap's console line.
func (e consoleEncoder) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	if ent.Message != ReportMessage {
		return e.Encoder.EncodeEntry(ent, fields)
	}
	buf, err := e.Encoder.EncodeEntry(ent, nil)
	if err != nil {
		return nil, err
	}
	for _, f := range fields {
		m := zapcore.NewMapObjectEncoder()
		f.AddTo(m)
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range m.Fields {
				if !yield(k) {
					return
				}
			}
		}) {
			v := block(m.Fields[k])
			buf.AppendString("    ")
			buf.AppendString(k)
			buf.AppendByte(':')
			if !strings.HasPrefix(v, "\n") {
				buf.AppendByte(' ')
			}
			buf.AppendString(v)
			buf.AppendByte('\n')
		}
	}
	return buf, nil
}

// block renders a report value: a list (the per-entrypoint drains, the phase
// outcomes) one item a line, indented under its key; an item that is an object is its
// JSON.
func block(v any) string {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice || rv.Type().Elem().Kind() == reflect.Uint8 {
		return fmt.Sprint(v)
	}
	var b strings.Builder
	for i := range rv.Len() {
		b.WriteString("\n      - ")
		item := rv.Index(i).Interface()
		switch reflect.Indirect(rv.Index(i)).Kind() {
		case reflect.Struct, reflect.Map:
			if j, err := json.Marshal(item); err == nil {
				b.Write(j)
				continue
			}
		}
		fmt.Fprint(&b, item)
	}
	return b.String()
}
