package gap

// The default thresholds, documented on [Thresholds]. The research
// thresholds come from the iteration rules of research refinement; the
// others from output quality detection.
const (
	defaultMinCoverage     = 0.70
	defaultMinConfidence   = 0.80
	defaultMaxConflicts    = 2
	defaultEarlyCoverage   = 0.85
	defaultEarlyConfidence = 0.90
	defaultMinCompleteness = 0.90
	defaultMinQuality      = 0.70
)

// Thresholds are the one declaration of the levels a loop is judged by. The
// gap analysis reports a gap for every metric below its threshold, and the
// convergence policies of package converge decide by the same values (the
// engine hands both the thresholds it was configured with), so whatever
// keeps a loop from converging is a gap its strategy can target.
//
// The defaults: MinCoverage 0.70, MinConfidence 0.80, MaxConflicts 2,
// EarlyCoverage 0.85, EarlyConfidence 0.90 (the iteration rules of research
// refinement), MinCompleteness 0.90, MinQuality 0.70 and MinSignalConfidence
// the value of MinConfidence (output quality detection).
// [Thresholds.Effective] returns them.
//
// A zero field selects its default; a negative field disables its check
// (no gap, and the convergence criterion requires nothing; a negative
// MaxConflicts tolerates no conflict); a ratio that is NaN or greater than 1
// is invalid ([Thresholds.Validate]). So the zero value is the default
// configuration.
//
// MinSignalConfidence, when zero, takes the value of MinConfidence after that
// one's default: disabling MinConfidence therefore also disables the signal
// confidence check unless MinSignalConfidence is set.
type Thresholds struct {
	// MinCoverage is the coverage below which a research assessment has a
	// [Coverage] gap (default 0.70).
	MinCoverage float64 `json:"min_coverage,omitempty"`
	// MinConfidence is the average finding confidence below which a research
	// assessment has confidence gaps (default 0.80).
	MinConfidence float64 `json:"min_confidence,omitempty"`
	// MaxConflicts is the number of unresolved conflicts a converged loop
	// tolerates (default 2; negative: none).
	MaxConflicts int `json:"max_conflicts,omitempty"`
	// AllowUnanswered lets a loop converge with critical questions open.
	AllowUnanswered bool `json:"allow_unanswered,omitempty"`
	// EarlyCoverage and EarlyConfidence are the levels from which a loop
	// exits early because quality is exceptionally high (defaults 0.85 and
	// 0.90).
	EarlyCoverage   float64 `json:"early_coverage,omitempty"`
	EarlyConfidence float64 `json:"early_confidence,omitempty"`
	// MinCompleteness is the output completeness below which
	// [IncompleteOutput] is triggered (default 0.90).
	MinCompleteness float64 `json:"min_completeness,omitempty"`
	// MinQuality is the quality score below which [QualityThreshold] is
	// triggered (default 0.70).
	MinQuality float64 `json:"min_quality,omitempty"`
	// MinSignalConfidence is the calibrated confidence of [Signals] below
	// which [LowConfidence] is triggered (default: MinConfidence).
	MinSignalConfidence float64 `json:"min_signal_confidence,omitempty"`
}

// Validate returns an error matching [ErrInvalidThreshold], naming the
// first field that is NaN or greater than 1, or nil.
func (t Thresholds) Validate() error {
	// !(v <= 1) is true for NaN and for values above 1.
	switch {
	case !(t.MinCoverage <= 1):
		return invalidThreshold("MinCoverage", t.MinCoverage)
	case !(t.MinConfidence <= 1):
		return invalidThreshold("MinConfidence", t.MinConfidence)
	case !(t.MinCompleteness <= 1):
		return invalidThreshold("MinCompleteness", t.MinCompleteness)
	case !(t.MinQuality <= 1):
		return invalidThreshold("MinQuality", t.MinQuality)
	case !(t.MinSignalConfidence <= 1):
		return invalidThreshold("MinSignalConfidence", t.MinSignalConfidence)
	case !(t.EarlyCoverage <= 1):
		return invalidThreshold("EarlyCoverage", t.EarlyCoverage)
	case !(t.EarlyConfidence <= 1):
		return invalidThreshold("EarlyConfidence", t.EarlyConfidence)
	}
	return nil
}

// Effective returns t with every zero field replaced by its default.
// Negative (disabled) fields are kept.
func (t Thresholds) Effective() Thresholds { return t.withDefaults() }

// withDefaults returns t with every zero field replaced by its default.
// Negative (disabled) fields are kept.
func (t Thresholds) withDefaults() Thresholds {
	if t.MinCoverage == 0 {
		t.MinCoverage = defaultMinCoverage
	}
	if t.MinConfidence == 0 {
		t.MinConfidence = defaultMinConfidence
	}
	if t.MinCompleteness == 0 {
		t.MinCompleteness = defaultMinCompleteness
	}
	if t.MinQuality == 0 {
		t.MinQuality = defaultMinQuality
	}
	if t.MaxConflicts == 0 {
		t.MaxConflicts = defaultMaxConflicts
	}
	if t.EarlyCoverage == 0 {
		t.EarlyCoverage = defaultEarlyCoverage
	}
	if t.EarlyConfidence == 0 {
		t.EarlyConfidence = defaultEarlyConfidence
	}
	if t.MinSignalConfidence == 0 {
		t.MinSignalConfidence = t.MinConfidence
	}
	return t
}

// below reports whether v falls below an enabled threshold min.
func below(v, min float64) bool { return min >= 0 && v < min-Tolerance }

// Tolerance absorbs the rounding of ratios a host computes: a value within
// Tolerance below a threshold meets it (findings of confidence 0.80 average
// to 0.7999999999999999). converge uses the same tolerance, so that a gap
// is reported exactly when the matching convergence criterion is unmet.
const Tolerance = 1e-9
