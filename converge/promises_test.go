package converge_test

// Tests of issue 20 (every documented promise holds) for this package.

import (
	"errors"
	"testing"

	"github.com/refine-go/refine/converge"
)

// TestValidateWindow (issue 20, item 4): a patience not less than the
// loop's history window is invalid, for the window given, through
// combinators too.
func TestValidateWindow(t *testing.T) {
	tests := []struct {
		name    string
		p       converge.Policy
		window  int
		wantErr bool
	}{
		{"patience 4 < 5", converge.EarlyStopping{Patience: 4}, 5, false},
		{"patience 5 = 5", converge.EarlyStopping{Patience: 5}, 5, true},
		{"default patience 3, window 3", converge.EarlyStopping{}, 3, true},
		{"window 0 is the default", converge.EarlyStopping{Patience: 31}, 0, false},
		{"window 0 is the default, 32", converge.EarlyStopping{Patience: 32}, 0, true},
		{"a larger window allows more", converge.EarlyStopping{Patience: 40}, 64, false},
		{"Any", converge.Any(converge.IterationLimit{}, converge.EarlyStopping{Patience: 9}), 8, true},
		{"All in Any", converge.Any(converge.All(converge.EarlyStopping{Patience: 9})), 8, true},
		{"other checks still run", converge.EarlyStopping{Patience: -1}, 8, true},
		{"a policy without a window", converge.NoProgress{}, 2, false},
		{"nil", nil, 8, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := converge.ValidateWindow(tt.p, tt.window)
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, converge.ErrInvalidPolicy)) {
				t.Errorf("ValidateWindow = %v, want error: %t (matching ErrInvalidPolicy)", err, tt.wantErr)
			}
		})
	}
}
