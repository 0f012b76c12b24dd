package pgcheckpoint

import (
	"context"
	"fmt"
	"iter"

	"github.com/refine-go/refine/checkpoint"
)

// sessionsBatch is how many sessions SessionsAfter reads per query.
const sessionsBatch = 100

// SessionsAfter is [Store.Sessions] from a name on: the sessions whose
// names sort after after ("" lists them all), in the order of their names,
// read sessionsBatch at a time by keyset queries (each from the last name
// read) that take no lock. A caller that stops early, as a viewer's page
// of the list does once full, costs one or a few queries whatever the
// number of sessions in the store. Sessions saved or removed between two
// queries may be listed or not, as in any paged listing. A failed query or
// an ended context yields one (nil, err) and stops.
func (s *Store) SessionsAfter(ctx context.Context, after string) iter.Seq2[*checkpoint.Checkpoint, error] {
	return func(yield func(*checkpoint.Checkpoint, error) bool) {
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			batch, err := s.sessionsBatch(ctx, after)
			if err != nil {
				yield(nil, fmt.Errorf("pgcheckpoint: listing sessions: %w", err))
				return
			}
			for _, c := range batch {
				if !yield(c, nil) {
					return
				}
			}
			if len(batch) < sessionsBatch {
				return
			}
			after = batch[len(batch)-1].Session
		}
	}
}

// sessionsBatch reads the newest envelopes of the next sessionsBatch
// sessions after after, by the primary key's index: what it reads is
// bounded by the batch, not by the table.
func (s *Store) sessionsBatch(ctx context.Context, after string) ([]*checkpoint.Checkpoint, error) {
	// The next names first, by the primary key's index (a DISTINCT ON
	// ordered by generation DESC sorted the whole table), then each
	// one's newest row.
	rows, err := s.pool.Query(ctx, `SELECT n.session, `+envelopeColumns+`
		FROM (SELECT DISTINCT session FROM `+s.table("checkpoints")+` WHERE session > $1
			ORDER BY session LIMIT $2) n
		CROSS JOIN LATERAL (SELECT `+envelopeColumns+` FROM `+s.table("checkpoints")+` x
			WHERE x.session = n.session ORDER BY x.generation DESC LIMIT 1) c
		ORDER BY n.session`, after, sessionsBatch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []*checkpoint.Checkpoint
	for rows.Next() {
		c := new(checkpoint.Checkpoint)
		var e envelope
		if err := rows.Scan(append([]any{&c.Session}, e.dest(c)...)...); err != nil {
			return nil, err
		}
		e.fill(c)
		list = append(list, c)
	}
	return list, rows.Err()
}
