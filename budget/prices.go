package budget

// Prices are a model's prices per million tokens, by kind of token, as
// providers quote them: input read from a prompt cache and written to it
// cost other than the rest of the input (Anthropic: reads a tenth of
// input, writes 1.25 times), and output more.
type Prices struct {
	Input, CacheRead, CacheWrite, Output float64
}

// Cost returns what u's tokens cost at p: its uncached input
// (InputTokens less CacheReadTokens and CacheWriteTokens) at Input, the
// cached parts at CacheRead and CacheWrite, OutputTokens at Output, and
// the tokens of Tokens that are neither input nor output at Input.
func (p Prices) Cost(u Usage) float64 {
	uncached := max(u.InputTokens-u.CacheReadTokens-u.CacheWriteTokens, 0)
	rest := max(u.Tokens-u.InputTokens-u.OutputTokens, 0)
	return (float64(uncached+rest)*p.Input + float64(u.CacheReadTokens)*p.CacheRead +
		float64(u.CacheWriteTokens)*p.CacheWrite + float64(u.OutputTokens)*p.Output) / 1e6
}

// Priced returns u with its Cost set to what its tokens cost at p, to
// charge a cost limit with cached input priced apart.
func (p Prices) Priced(u Usage) Usage {
	u.Cost = p.Cost(u)
	return u
}
