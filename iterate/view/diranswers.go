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
	if err := checkpoint.ValidateSession(session); err != nil {
		return err
	}
	err := recordOnce(ctx, "DirAnswers", a.Path, dirAnswerName(session, gen), "answer", a.Now, func(at time.Time) any {
		return AnswerRecord{Generation: gen, Answer: answer, By: by, At: at}
	})
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: generation %d of %s has its answer recorded", ErrAnswered, gen, session)
	}
	return err
}

// recordOnce records a request of a viewer's action (what: "answer",
// "extension", "fork") as the file name of the directory path, created
// (0700) when missing: rec at the time now tells (time.Now when nil),
// written durably and once (see writeOnce); an error matching fs.ErrExist
// when one is recorded already. owner names the recorder in the error of
// an empty path.
func recordOnce(ctx context.Context, owner, path, name, what string, now func() time.Time, rec func(at time.Time) any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if path == "" {
		return errors.New("view: " + owner + " without a Path")
	}
	if err := os.MkdirAll(path, 0o700); err != nil {
		return fmt.Errorf("view: recording the %s: %w", what, err)
	}
	if now == nil {
		now = time.Now
	}
	data, err := json.Marshal(rec(now().UTC()))
	if err != nil {
		return err
	}
	err = writeOnce(path, name, data)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("view: recording the %s: %w", what, err)
	}
	return err
}

// readRecord reads into rec the request a recordOnce wrote as the file
// name of the directory path (what names it, and desc which one, in
// errors); an error matching fs.ErrNotExist when there is none.
func readRecord(path, name, what, desc string, rec any) error {
	data, err := os.ReadFile(filepath.Join(path, name))
	if err != nil {
		return fmt.Errorf("view: reading the %s: %w", what, err)
	}
	if err := json.Unmarshal(data, rec); err != nil {
		return fmt.Errorf("view: reading the %s %s: %w", what, desc, err)
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
	var rec AnswerRecord
	if err := readRecord(path, dirAnswerName(session, gen), "answer", fmt.Sprintf("of generation %d of %s", gen, session), &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}
