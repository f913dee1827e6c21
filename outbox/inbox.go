package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
)

// defaultInboxTable names the inbox table when none is given.
const defaultInboxTable = "inbox"

// ErrNoEventID is returned by Inbox.Handle for a message without an outbox-event-id
// header (see EventID): it was not published by a Relay, and it cannot be told from a repeat.
var ErrNoEventID = errors.New("outbox: the message has no " + headerEventID + " header")

// Inbox is one inbox table: the ids of the events a consumer handled, written in the
// consumer's own transaction. Make it with NewInbox; it is safe for concurrent use
// and holds no connection.
type Inbox struct {
	name, quoted string
}

// NewInbox returns the inbox kept in table, optionally schema-qualified; empty means
// "inbox". A name that is not an identifier is a *fault.ConfigError naming
// field.
func NewInbox(field, table string) (*Inbox, error) {
	name, quoted, err := parseTable(field, cmp.Or(table, defaultInboxTable))
	if err != nil {
		return nil, err
	}
	return &Inbox{name: name, quoted: quoted}, nil
}

// Schema returns the SQL that creates the inbox table, for a migration. Rows are
// never deleted by the inbox; a retention job may delete those older than the longest
// a redelivery can come late (the topic's retention).
func (i *Inbox) Schema() string {
	return fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	id text PRIMARY KEY,
	handled_at timestamptz NOT NULL DEFAULT now()
);`, i.quoted)
}

var inboxColumns = []column{{"id", "text"}, {"handled_at", "timestamp with time zone"}}

// Verify checks the table as Outbox.Verify does.
func (i *Inbox) Verify(ctx context.Context, db DB) error {
	return verify(ctx, db, "inbox", i.name, i.quoted, inboxColumns)
}

// Create runs Schema under the advisory lock Outbox.Create takes.
func (i *Inbox) Create(ctx context.Context, db DB) error { return create(ctx, db, i.Schema()) }

// Record inserts id in tx and reports whether it was new. It returns false when the
// id was recorded by a committed transaction; when another transaction recording the
// same id is still open, it waits for it (the primary key's lock) and reports false
// if that one commits, true if it rolls back. So a consumer that writes its effect
// in tx only when Record reports true applies each event once, however often it is
// delivered, as long as it commits tx.
func (i *Inbox) Record(ctx context.Context, tx pgx.Tx, id string) (bool, error) {
	tag, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (id) VALUES ($1) ON CONFLICT (id) DO NOTHING`, i.quoted), id)
	if err != nil {
		return false, fmt.Errorf("inbox record in %s: %w", i.name, err)
	}
	return tag.RowsAffected() == 1, nil
}

// EventID returns the id of the event msg carries, or "" when it has none: the value
// of its "outbox-event-id" header (a reader in another language reads that header).
// The id, a UUID, is the same on every publication of the event, so a consumer's
// Inbox recognises a repeat.
func EventID(msg kafka.Message) string {
	for _, h := range msg.Headers {
		if h.Key == headerEventID {
			return string(h.Value)
		}
	}
	return ""
}

// Beginner begins a transaction: a *pgxpool.Pool or a *pgx.Conn.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Handle handles msg once. Steps: it begins a transaction on db, records msg's event
// id (Record), calls fn with the transaction when the id is new, and commits. A
// repeat commits nothing of fn's, as fn is not called. An error from fn (returned as
// is) or from the database (wrapped once) rolls everything back, so the consumer
// retries the message; a message without an id is ErrNoEventID, before anything is
// sent.
func (i *Inbox) Handle(ctx context.Context, db Beginner, msg kafka.Message, fn func(ctx context.Context, tx pgx.Tx) error) error {
	id := EventID(msg)
	if id == "" {
		return ErrNoEventID
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("inbox handle: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	first, err := i.Record(ctx, tx, id)
	if err != nil {
		return err
	}
	if first {
		if err := fn(ctx, tx); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("inbox handle: commit: %w", err)
	}
	return nil
}
