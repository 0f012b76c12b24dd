package view

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/refine-go/refine/checkpoint"
)

// DirAnswers records the answers to the escalations of sessions kept in a
// directory (a checkpoint.Dir's), for the host to resume them with: an
// [Answerer] and [AnswerOnce] for [Answers]. Each answer is a file of its
// own in the directory Path (one the host reads, apart from the
// checkpoints' directory), named after the session and the generation of
// the escalation it answers, holding its [AnswerRecord] as JSON. It is
// written whole to a temporary file, synced, and linked to its name, which
// fails when the name exists: an escalation takes one answer, a second
// gets an error matching [ErrAnswered], never an overwrite, also between
// two viewers. AnswerOnce returns nil only once the answer and the
// directory's entry are synced (durable). The viewer runs no host code:
// the host reads the answer with [ReadDirAnswer] and resumes the session
// with iterate.WithAnswer.
type DirAnswers struct {
	// Path is the answers' directory; it is created (0700) when missing.
	Path string
	// Now tells the time an answer is recorded at; time.Now when nil.
	Now func() time.Time
}

// dirAnswerName is the file of the answer to session's escalation saved
// as generation gen.
func dirAnswerName(session string, gen uint64) string {
	return fmt.Sprintf("%s.%020d.answer", session, gen)
}

// Answer refuses: an answer to a directory's session names the generation
// of the escalation it answers (AnswerOnce, which the handler calls).
func (a DirAnswers) Answer(context.Context, string, string) error {
	return errors.New("view: DirAnswers answers through AnswerOnce only")
}

// AnswerOnce records answer, by by, to the escalation of session saved as
// generation gen, durably, unless one is recorded already (an error
// matching ErrAnswered).
func (a DirAnswers) AnswerOnce(ctx context.Context, session string, gen uint64, answer, by string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateSession(session); err != nil {
		return err
	}
	if a.Path == "" {
		return errors.New("view: DirAnswers without a Path")
	}
	if err := os.MkdirAll(a.Path, 0o700); err != nil {
		return fmt.Errorf("view: recording the answer: %w", err)
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	data, err := json.Marshal(AnswerRecord{Generation: gen, Answer: answer, By: by, At: now().UTC()})
	if err != nil {
		return err
	}
	err = writeOnce(a.Path, dirAnswerName(session, gen), data)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: generation %d of %s has its answer recorded", ErrAnswered, gen, session)
	}
	if err != nil {
		return fmt.Errorf("view: recording the answer: %w", err)
	}
	return nil
}

// writeOnce writes data as the file name of the directory dir, whole and
// durably, unless the name exists (an error matching fs.ErrExist): to a
// temporary file, synced, linked to its name (a link, unlike a rename,
// never replaces a file: of two writers, one links, the other is refused),
// and the directory synced.
func writeOnce(dir, name string, data []byte) error {
	final := filepath.Join(dir, name)
	if _, err := os.Lstat(final); err == nil {
		return fs.ErrExist
	}
	tmp, err := os.CreateTemp(dir, ".record-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), final); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir syncs the directory path's entries (where a directory can be
// synced: not on Windows, whose directory entries are durable with the
// file's).
func syncDir(path string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadDirAnswer reads the answer a [DirAnswers] of the directory path
// recorded to the escalation of session saved as generation gen; an error
// matching fs.ErrNotExist when there is none (yet).
func ReadDirAnswer(path, session string, gen uint64) (*AnswerRecord, error) {
	if err := checkpoint.ValidateSession(session); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(path, dirAnswerName(session, gen)))
	if err != nil {
		return nil, fmt.Errorf("view: reading the answer: %w", err)
	}
	var rec AnswerRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("view: reading the answer of generation %d of %s: %w", gen, session, err)
	}
	return &rec, nil
}
