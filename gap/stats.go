package gap

// FixableRatio returns the share of gaps that are Fixable: the fixability
// ratio with which iteration detection estimates the likelihood that another
// iteration improves the work. It is 1 for no gaps (nothing stands in the
// way).
func FixableRatio(gaps []Gap) float64 {
	if len(gaps) == 0 {
		return 1
	}
	n := 0
	for i := range gaps {
		if gaps[i].Fixable {
			n++
		}
	}
	return float64(n) / float64(len(gaps))
}

// MeanSeverity returns the average Severity of gaps (the average trigger
// severity of iteration detection), or 0 for no gaps.
func MeanSeverity(gaps []Gap) float64 {
	if len(gaps) == 0 {
		return 0
	}
	var sum float64
	for i := range gaps {
		sum += gaps[i].Severity
	}
	return sum / float64(len(gaps))
}
