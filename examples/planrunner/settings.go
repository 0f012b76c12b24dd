package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// resumable are the flags whose values a run saves and --resume restores:
// everything that decides what the run does, but neither where its
// checkpoints are (--state, --session) nor how it reports (--quiet,
// --verbose, --json).
var resumable = []string{
	"implementer-cmd", "simulate", "sim-fail", "sim-tasks-per-call", "sim-skip-markers",
	"parallel", "max-iterations", "context-window", "context-threshold", "rate-limit-budget",
	"phase-timeout", "summaries", "file-mode",
}

// savedSettings are the values of the resumable flags of a run, as
// flag.Value strings, saved as JSON next to the run's checkpoints.
type savedSettings map[string]string

// settingsPath is where the settings of session are saved in the
// checkpoint directory dir (a name the checkpoint store does not use).
func settingsPath(dir, session string) string {
	return filepath.Join(dir, session+".settings.json")
}

// settingsOf returns the values of the resumable flags of fs, after
// validation.
func settingsOf(fs *flag.FlagSet) savedSettings {
	s := savedSettings{}
	for _, name := range resumable {
		s[name] = fs.Lookup(name).Value.String()
	}
	return s
}

// save writes the settings to path atomically.
func (s savedSettings) save(path string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, append(data, '\n')); err != nil {
		return fmt.Errorf("saving the run's settings for --resume: %w", err)
	}
	return nil
}

// loadSettings reads the settings saved at path; os.ErrNotExist when there
// are none.
func loadSettings(path string) (savedSettings, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s savedSettings
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: damaged settings: %v", path, err)
	}
	return s, nil
}

// ErrSettingsMismatch is matched by the error of a resume whose command
// line contradicts the settings of the run it continues.
var ErrSettingsMismatch = errors.New("the resume's flags differ from the run it continues")

// restore sets every resumable flag of o that the command line did not
// give to its saved value. A flag given with another value than the saved
// one is an error wrapping ErrSettingsMismatch: a resume continues the run
// as it was started (start over without --resume to change it).
func (s savedSettings) restore(o *options) error {
	var diffs []error
	for _, name := range resumable {
		saved, ok := s[name]
		if !ok {
			continue
		}
		f := o.flags.Lookup(name)
		if o.explicit[name] {
			if got := f.Value.String(); got != saved {
				diffs = append(diffs, fmt.Errorf("--%s is %q, the run being resumed has %q", name, got, saved))
			}
			continue
		}
		if err := o.flags.Set(name, saved); err != nil {
			return fmt.Errorf("restoring --%s: %v", name, err)
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w: %w; resume without these flags to continue with the saved settings, or run without --resume to start over (the plan file keeps the progress)",
			ErrSettingsMismatch, errors.Join(diffs...))
	}
	return nil
}
