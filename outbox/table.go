package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/servicewright/servicewright/fault"
)

// defaultTable names the outbox table when none is given.
const defaultTable = "outbox"

// headerEventID is the Kafka header that carries each event's id; EventID documents
// it for readers in other languages.
const headerEventID = "outbox-event-id"

// Event is one message to publish. Topic is required; Key orders (events of one key
// are published in the order written, to one partition) and may be empty, for events
// that need no order. Value is the payload.
type Event struct {
	Topic string
	Key   string
	Value []byte
}

// DB is what Write, Verify and Create run their statements on: a pgx.Tx, a
// *pgx.Conn or a *pgxpool.Pool.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Outbox is one outbox table. Make it with New; it is safe for concurrent use and
// holds no connection.
type Outbox struct {
	name    string // as given, for errors
	quoted  string // quoted identifier, schema-qualified when given so
	channel string // the NOTIFY channel
	index   string // the (key, seq) index's name
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// New returns the outbox kept in table, optionally schema-qualified ("events.outbox");
// empty means "outbox". A table name that is not an identifier is a
// *fault.ConfigError naming field, the setting it was read from. Its NOTIFY channel
// is the table's name, with an underscore for the dot.
func New(field, table string) (*Outbox, error) {
	name, quoted, err := parseTable(field, cmp.Or(table, defaultTable))
	if err != nil {
		return nil, err
	}
	flat := strings.ReplaceAll(name, ".", "_")
	return &Outbox{name: name, quoted: quoted, channel: flat, index: flat + "_key_seq"}, nil
}

func parseTable(field, table string) (name, quoted string, err error) {
	if !identifier.MatchString(table) || len(table) > 60 {
		return "", "", fault.Invalid(field, "must be a table name (an identifier of at most 60 characters, optionally schema-qualified), got %q", table)
	}
	return table, pgx.Identifier(strings.Split(table, ".")).Sanitize(), nil
}

// Table returns the table's name, as given to New.
func (o *Outbox) Table() string { return o.name }

// Schema returns the SQL that creates the table and its index, for a migration. It
// is idempotent (IF NOT EXISTS). seq orders the events; id is the event id carried in
// the outbox-event-id header; created_at dates the oldest pending event for the metrics.
func (o *Outbox) Schema() string {
	return fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]s (
	seq bigserial PRIMARY KEY,
	id uuid NOT NULL DEFAULT gen_random_uuid(),
	topic text NOT NULL,
	key text,
	value bytea,
	created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS %[2]s ON %[1]s (key, seq);`, o.quoted, pgx.Identifier{o.index}.Sanitize())
}

// outboxColumns is the shape Verify wants: each column and its type, as
// format_type names it.
var outboxColumns = []column{
	{"seq", "bigint"}, {"id", "uuid"}, {"topic", "text"}, {"key", "text"}, {"value", "bytea"},
	{"created_at", "timestamp with time zone"},
}

// Write inserts events in tx, to be published once tx commits, and sends the
// table's NOTIFY, which PostgreSQL delivers at commit and which wakes the relays.
// Each event with a key first takes a transaction-level advisory lock on the key,
// so that the writers of one key commit one after the other, in the order of their
// seq: that is what keeps a key's events in order. Two transactions writing the same
// two keys in opposite orders can thus deadlock (PostgreSQL aborts one); write a
// transaction's keys in a stable order. An event without a Topic is refused before
// anything is sent.
func (o *Outbox) Write(ctx context.Context, tx DB, events ...Event) error {
	for i, e := range events {
		if e.Topic == "" {
			return fmt.Errorf("outbox write: event %d has no topic", i)
		}
	}
	for _, e := range events {
		var key *string
		if e.Key != "" {
			key = &e.Key
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(writeSQL, o.quoted), lockClass, key, o.channel, e.Topic, e.Value); err != nil {
			return fmt.Errorf("outbox write to %s: %w", o.name, err)
		}
	}
	return nil
}

// lockClass is the first key of the advisory locks Write takes per event key.
const lockClass = 727202

// writeSQL: $1 lock class, $2 key (NULL: no lock), $3 channel, $4 topic, $5 value.
// The lock and the notice are taken in CTEs the INSERT reads, so they run first.
const writeSQL = `WITH l AS (SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))),
n AS (SELECT pg_notify($3, ''))
INSERT INTO %s (topic, key, value) SELECT $4, $2::text, $5 FROM l, n`

// Verify checks that the table exists and has the columns Write and the Relay use,
// with their types. A missing table or a wrong shape is a *fault.ConfigError
// naming the table and every column at fault, and pointing at Schema; a failure to
// ask is returned as is.
func (o *Outbox) Verify(ctx context.Context, db DB) error {
	return verify(ctx, db, "outbox", o.name, o.quoted, outboxColumns)
}

// Create runs Schema under a transaction-level advisory lock, so that replicas
// starting together create it one at a time.
func (o *Outbox) Create(ctx context.Context, db DB) error {
	return create(ctx, db, o.Schema())
}

type column struct{ name, typ string }

// verify compares the table's columns with want.
func verify(ctx context.Context, db DB, what, name, quoted string, want []column) error {
	var exists bool
	if err := db.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, quoted).Scan(&exists); err != nil {
		return fmt.Errorf("%s table %s: %w", what, name, err)
	}
	if !exists {
		return fault.Invalid("Table", "the %s table %q does not exist: create it with the SQL of Schema (docs/outbox.md), or set CreateTable", what, name)
	}
	rows, err := db.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, quoted)
	if err != nil {
		return fmt.Errorf("%s table %s: %w", what, name, err)
	}
	have := map[string]string{}
	for rows.Next() {
		var c, t string
		if err := rows.Scan(&c, &t); err != nil {
			rows.Close()
			return fmt.Errorf("%s table %s: %w", what, name, err)
		}
		have[c] = t
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s table %s: %w", what, name, err)
	}
	var l fault.Problems
	for _, c := range want {
		switch t, ok := have[c.name]; {
		case !ok:
			l.Addf("Table", "the %s table %q has no column %s (%s); see Schema (docs/outbox.md)", what, name, c.name, c.typ)
		case t != c.typ:
			l.Addf("Table", "the %s table %q has column %s of type %s, want %s; see Schema (docs/outbox.md)", what, name, c.name, t, c.typ)
		}
	}
	return l.Err()
}

// schemaLock is the advisory lock Create holds while it runs its SQL.
const schemaLock = 727201

func create(ctx context.Context, db DB, ddl string) error {
	if tx, ok := db.(pgx.Tx); ok {
		return createIn(ctx, tx, ddl)
	}
	b, ok := db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return errors.New("outbox create: the DB cannot begin a transaction")
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		return fmt.Errorf("outbox create: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := createIn(ctx, tx, ddl); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("outbox create: %w", err)
	}
	return nil
}

func createIn(ctx context.Context, tx pgx.Tx, ddl string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, schemaLock); err != nil {
		return fmt.Errorf("outbox create: %w", err)
	}
	for stmt := range strings.SplitSeq(ddl, ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("outbox create: %w", err)
		}
	}
	return nil
}
