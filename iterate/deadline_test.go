package iterate_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// escalating is seed 002's loop, which escalates after 3 failing
// iterations and converges on the 5th assessment.
func escalating() *iteratetest.Script {
	fail := failing("TestLogin", "userId 123", `userId "123"`)
	return &iteratetest.Script{Steps: []iteratetest.Step{
		{Assessment: fail}, {Assessment: fail}, {Assessment: fail}, {Assessment: fail}, {Assessment: passing()},
	}}
}

var dayDeadline = iterate.Deadline{After: 24 * time.Hour, RemindBefore: time.Hour}

// resumeIn resumes the session as a process of its own would: a new
// engine on the store, observed by a new recorder.
func resumeIn(store iterate.Checkpointer, script *iteratetest.Script, d iterate.Deadline, opts ...iterate.ResumeOption) (*iterate.Result[iteratetest.State], *iteratetest.Recorder, error) {
	rec := &iteratetest.Recorder{}
	eng := iterate.New(script, seed002(store, iterate.WithQuestionDeadline(d), iterate.WithObserver(rec.Observe))...)
	res, err := eng.Resume(context.Background(), opts...)
	return res, rec, err
}

// TestQuestionDeadlineStops guards: a question carries its deadline and
// reminder time, saved with it; Resume before the reminder returns the
// escalation and sends nothing; the first Resume past the reminder's time
// sends one QuestionReminder and saves that it did (later ones send none,
// also from other processes); the first past the deadline ends the session
// as Expired (final) with a QuestionExpired. Mutations caught: no reminder
// sent (no event), the reminder not saved (a second one from the next
// process), the deadline not enforced or enforced early (escalated at the
// deadline, expired before), Expired not final.
func TestQuestionDeadlineStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &checkpoint.Memory{}
		script := escalating()
		t0 := time.Now()
		eng := iterate.New(script, seed002(store, iterate.WithQuestionDeadline(dayDeadline))...)
		res, err := eng.Run(context.Background(), iteratetest.State{})
		if !errors.Is(err, iterate.ErrEscalated) {
			t.Fatalf("run: %v, want an escalation", err)
		}
		e := res.Escalation
		if !e.Deadline.Equal(t0.Add(24*time.Hour)) || !e.RemindAt.Equal(t0.Add(23*time.Hour)) || e.OnExpiry != iterate.ExpireStop {
			t.Fatalf("escalation deadline %v remind %v expiry %q", e.Deadline, e.RemindAt, e.OnExpiry)
		}
		if !e.Due().Equal(e.RemindAt) {
			t.Errorf("due %v, want the reminder's time", e.Due())
		}

		time.Sleep(23*time.Hour - time.Second)
		_, rec, err := resumeIn(store, script, dayDeadline)
		if !errors.Is(err, iterate.ErrEscalated) || len(iteratetest.Of[iterate.QuestionReminder](rec)) != 0 {
			t.Fatalf("before the reminder: %v, %d reminders", err, len(iteratetest.Of[iterate.QuestionReminder](rec)))
		}

		time.Sleep(time.Second)
		res, rec, err = resumeIn(store, script, dayDeadline)
		rem := iteratetest.Of[iterate.QuestionReminder](rec)
		if !errors.Is(err, iterate.ErrEscalated) || len(rem) != 1 || !rem[0].Deadline.Equal(e.Deadline) || rem[0].Escalation.Question != e.Question {
			t.Fatalf("at the reminder: %v, reminders %+v", err, rem)
		}
		if !res.Escalation.Due().Equal(e.Deadline) {
			t.Errorf("due after the reminder %v, want the deadline", res.Escalation.Due())
		}
		time.Sleep(30 * time.Minute)
		_, rec, err = resumeIn(store, script, dayDeadline)
		if !errors.Is(err, iterate.ErrEscalated) || len(iteratetest.Of[iterate.QuestionReminder](rec)) != 0 {
			t.Fatalf("after the reminder: %v, a second reminder", err)
		}

		time.Sleep(30*time.Minute - time.Second)
		if _, _, err = resumeIn(store, script, dayDeadline); !errors.Is(err, iterate.ErrEscalated) {
			t.Fatalf("a second before the deadline: %v", err)
		}
		time.Sleep(time.Second)
		res, rec, err = resumeIn(store, script, dayDeadline)
		exp := iteratetest.Of[iterate.QuestionExpired](rec)
		if err != nil || res.Status != iterate.Expired || len(exp) != 1 || exp[0].OnExpiry != iterate.ExpireStop || res.Escalation == nil {
			t.Fatalf("at the deadline: %v, %s, expired events %+v", err, res.Status, exp)
		}
		saved, _ := store.Load(context.Background(), "task-003")
		if saved.Status != string(iterate.Expired) {
			t.Errorf("saved status %q, want expired", saved.Status)
		}
		// Final: an answer now is too late.
		res, _, err = resumeIn(store, script, dayDeadline, iterate.WithAnswer("late"))
		if err != nil || res.Status != iterate.Expired || res.Iterations != 3 {
			t.Fatalf("answer after expiry: %v, %s after %d", err, res.Status, res.Iterations)
		}
	})
}

// TestQuestionDeadlineDefaultAnswer guards: under ExpireAnswer the Resume
// past the deadline continues the session with the default answer, which
// reaches the next task, as WithAnswer's would. Mutation caught: the
// default not given (the task's Answer empty, or the session stopped).
func TestQuestionDeadlineDefaultAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &checkpoint.Memory{}
		script := escalating()
		d := iterate.Deadline{After: time.Hour, OnExpiry: iterate.ExpireAnswer, Default: "use a number"}
		eng := iterate.New(script, seed002(store, iterate.WithQuestionDeadline(d))...)
		if _, err := eng.Run(context.Background(), iteratetest.State{}); !errors.Is(err, iterate.ErrEscalated) {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		res, rec, err := resumeIn(store, script, d)
		if err != nil || res.Status != iterate.Converged || res.Iterations != 4 {
			t.Fatalf("past the deadline: %v, %s after %d; want converged after 4", err, res.Status, res.Iterations)
		}
		if exp := iteratetest.Of[iterate.QuestionExpired](rec); len(exp) != 1 || exp[0].Answer != "use a number" {
			t.Errorf("expired events %+v", exp)
		}
		if _, tasks := script.Calls(); tasks[3].Answer != "use a number" {
			t.Errorf("the default answer did not reach the next attempt: %q", tasks[3].Answer)
		}
	})
}

// TestExtendDeadline guards: the answerer moves the deadline later, saved
// with the question and recorded (by whom, from, to); the reminder moves
// with it and is due again; a Resume past the old deadline then waits; an
// extension to an earlier time, or of a session not escalated, is a
// *ConfigError. Mutations caught: the extension not saved (the session
// expires at the old deadline), the reminder not re-armed.
func TestExtendDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &checkpoint.Memory{}
		script := escalating()
		t0 := time.Now()
		eng := iterate.New(script, seed002(store, iterate.WithQuestionDeadline(dayDeadline))...)
		if _, err := eng.Run(context.Background(), iteratetest.State{}); !errors.Is(err, iterate.ErrEscalated) {
			t.Fatal(err)
		}
		time.Sleep(23 * time.Hour)
		if _, rec, _ := resumeIn(store, script, dayDeadline); len(iteratetest.Of[iterate.QuestionReminder](rec)) != 1 {
			t.Fatal("no reminder")
		}
		var ce *iterate.ConfigError
		if _, _, err := resumeIn(store, script, dayDeadline, iterate.ExtendDeadline(t0.Add(time.Hour), "bob")); !errors.As(err, &ce) {
			t.Fatalf("extension to an earlier time: %v, want a *ConfigError", err)
		}
		to := t0.Add(48 * time.Hour)
		res, _, err := resumeIn(store, script, dayDeadline, iterate.ExtendDeadline(to, "bob"))
		if !errors.Is(err, iterate.ErrEscalated) || !res.Escalation.Deadline.Equal(to) || !res.Escalation.Due().Equal(to.Add(-time.Hour)) {
			t.Fatalf("extended: %v, deadline %v due %v", err, res.Escalation.Deadline, res.Escalation.Due())
		}
		if x := res.Escalation.Extensions; len(x) != 1 || x[0].By != "bob" || !x[0].From.Equal(t0.Add(24*time.Hour)) || !x[0].To.Equal(to) {
			t.Errorf("extensions %+v", x)
		}
		time.Sleep(2 * time.Hour) // past the old deadline
		if res, _, err := resumeIn(store, script, dayDeadline); !errors.Is(err, iterate.ErrEscalated) {
			t.Fatalf("past the old deadline: %v, %s", err, res.Status)
		}
		time.Sleep(22 * time.Hour) // at the new reminder
		if _, rec, _ := resumeIn(store, script, dayDeadline); len(iteratetest.Of[iterate.QuestionReminder](rec)) != 1 {
			t.Error("no reminder before the new deadline")
		}
		res, _, err = resumeIn(store, script, dayDeadline, iterate.WithAnswer("use a number"))
		if err != nil || res.Status != iterate.Converged {
			t.Fatalf("answered: %v, %s", err, res.Status)
		}
		if _, _, err := resumeIn(store, script, dayDeadline, iterate.ExtendDeadline(to.Add(time.Hour), "bob")); !errors.As(err, &ce) {
			t.Errorf("extension of a converged session: %v, want a *ConfigError", err)
		}
	})
}

// TestQuestionDeadlineFingerprint guards: the deadline's length and its
// expiry are settings that guard Resume (they decide how the session
// goes on); the reminder's lead is not. Mutation caught: the deadline
// left out of the settings (no *SettingsChangedError), or the reminder
// put in (one where none is due).
func TestQuestionDeadlineFingerprint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		d       iterate.Deadline
		refused bool
	}{
		{"same", dayDeadline, false},
		{"reminder_moved", iterate.Deadline{After: 24 * time.Hour, RemindBefore: 2 * time.Hour}, false},
		{"longer", iterate.Deadline{After: 48 * time.Hour, RemindBefore: time.Hour}, true},
		{"default_answer", iterate.Deadline{After: 24 * time.Hour, OnExpiry: iterate.ExpireAnswer, Default: "go on"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &checkpoint.Memory{}
			script := escalating()
			eng := iterate.New(script, seed002(store, iterate.WithQuestionDeadline(dayDeadline))...)
			if _, err := eng.Run(context.Background(), iteratetest.State{}); !errors.Is(err, iterate.ErrEscalated) {
				t.Fatal(err)
			}
			_, _, err := resumeIn(store, script, tc.d)
			var sc *iterate.SettingsChangedError
			if got := errors.As(err, &sc); got != tc.refused {
				t.Fatalf("resume under %+v: %v; refused %v, want %v", tc.d, err, got, tc.refused)
			}
		})
	}
}

// TestQuestionDeadlineInvalid guards the option's validation.
func TestQuestionDeadlineInvalid(t *testing.T) {
	for _, d := range []iterate.Deadline{
		{},
		{After: time.Hour, RemindBefore: time.Hour},
		{After: time.Hour, RemindBefore: -time.Second},
		{After: time.Hour, OnExpiry: "later"},
	} {
		_, err := iterate.New(escalating(), iterate.WithQuestionDeadline(d)).Run(context.Background(), iteratetest.State{})
		var ce *iterate.ConfigError
		if !errors.As(err, &ce) || ce.Option != "WithQuestionDeadline" {
			t.Errorf("%+v: %v, want a *ConfigError", d, err)
		}
	}
}
