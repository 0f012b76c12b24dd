package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/examples/internal/e2etest"
	"github.com/refine-go/refine/iterate"
)

// binary is the inspect program, built once by TestMain.
var binary string

func TestMain(m *testing.M) { e2etest.Main(m, "inspect", &binary) }

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// inspect runs the binary with args.
func inspect(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return result{stdout.String(), stderr.String(), code}
}

// fields returns the lines of a table, each split into its columns (two
// or more spaces apart).
func fields(out string) map[string][]string {
	rows := make(map[string][]string)
	for _, line := range strings.Split(out, "\n") {
		cols := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
		if len(cols) > 1 {
			rows[cols[0]] = cols
		}
	}
	return rows
}

func TestE2EList(t *testing.T) {
	dir := sessions(t)
	before := tree(t, dir)
	r := inspect(t, dir)
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rows := fields(r.stdout)
	c, _ := report(t, dir, "converged")
	want := map[string][]string{
		"SESSION":   {"SESSION", "STATUS", "ITERATION", "GENERATION", "UPDATED", "QUESTION", "FINGERPRINT"},
		"converged": {"converged", "converged", strconv.Itoa(c.Iteration), strconv.FormatUint(c.Generation, 10), c.Time.UTC().Format("2006-01-02 15:04:05Z"), "-", c.Fingerprint},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, rows[name]); diff != "" {
			t.Errorf("row %s mismatch (-want +got):\n%s\n%s", name, diff, r.stdout)
		}
	}
	for session, status := range map[string]string{"partial": "max_iterations", "escalated": "escalated", "fallback": "running (fallback)", "broken": "DAMAGED"} {
		if row := rows[session]; len(row) < 2 || row[1] != status {
			t.Errorf("row %s: %q, want status %q\n%s", session, row, status, r.stdout)
		}
	}
	for _, note := range []string{
		"! broken: no readable generation: checkpoint: corrupt generation",
		"bad magic number, not a checkpoint",
		"! fallback: generation(s) " + strconv.FormatUint(newestOnDisk(t, dir, "fallback"), 10) + " damaged; listed generation",
	} {
		if !strings.Contains(r.stdout, note) {
			t.Errorf("the listing does not say %q:\n%s", note, r.stdout)
		}
	}
	if q := rows["escalated"]; len(q) < 6 || q[5] == "-" {
		t.Errorf("the escalated session's question is not listed: %q", q)
	}
	if diff := cmp.Diff(before, tree(t, dir)); diff != "" {
		t.Errorf("inspect changed the directory (-before +after):\n%s", diff)
	}

	t.Run("json", func(t *testing.T) {
		r := inspect(t, "--json", dir)
		var got []entry
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != exitOK {
			t.Fatalf("exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		var names []string
		for _, e := range got {
			names = append(names, e.Session)
			if e.Session == "converged" && (e.Generation != c.Generation || e.Fingerprint != c.Fingerprint || e.Status != "converged" || e.Damaged) {
				t.Errorf("converged: %+v", e)
			}
			if e.Session == "broken" && (!e.Damaged || e.Error == "" || e.Status != "") {
				t.Errorf("broken: %+v, want damaged with an error", e)
			}
			if e.Session == "fallback" && (!e.Damaged || len(e.Skipped) != 1 || e.Error != "") {
				t.Errorf("fallback: %+v, want damaged with one generation skipped", e)
			}
		}
		if diff := cmp.Diff([]string{"broken", "converged", "escalated", "fallback", "partial"}, names); diff != "" {
			t.Errorf("sessions mismatch (-want +got):\n%s", diff)
		}
	})
}

// newestOnDisk returns the highest generation file of session in dir.
func newestOnDisk(t *testing.T, dir, session string) uint64 {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, session+".*.ckpt"))
	var top uint64
	for _, p := range paths {
		g, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), session+"."), ".ckpt"), 10, 64)
		if err == nil {
			top = max(top, g)
		}
	}
	return top
}

// tree returns the files of dir with their contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := make(map[string]string)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = string(data)
	}
	return out
}

func TestE2EHistory(t *testing.T) {
	dir := sessions(t)
	c, rep := report(t, dir, "converged")
	r := inspect(t, "--spark", dir, "converged")
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rows := fields(r.stdout)
	for _, rec := range rep.History.Recent {
		row := rows[strconv.Itoa(rec.Iteration)]
		if len(row) != 9 {
			t.Errorf("iteration %d: row %q\n%s", rec.Iteration, row, r.stdout)
			continue
		}
		want := []string{strconv.Itoa(rec.Iteration), "-", "-", "-",
			strconv.FormatFloat(rec.Coverage, 'f', 2, 64), strconv.FormatFloat(rec.Confidence, 'f', 2, 64),
			strconv.Itoa(rec.Conflicts), strconv.Itoa(rec.Gaps), "-"}
		if rec.Iteration > 0 {
			// Tokens per iteration: the history's, as iterate.Inspect reads it.
			want[1], want[2], want[3], want[8] = rec.Action, strconv.Itoa(rec.Tasks)+" ("+strconv.Itoa(rec.FailedTasks)+")",
				strconv.FormatInt(rec.Tokens, 10), round(rec.Duration).String()
		}
		if diff := cmp.Diff(want, row); diff != "" {
			t.Errorf("iteration %d mismatch (-want +got):\n%s", rec.Iteration, diff)
		}
	}
	var cov string
	for _, m := range seriesOf(rep, nil) {
		if m.name == "coverage" {
			cov = m.spark()
		}
	}
	if cov == "" {
		t.Fatal("no coverage among the default metrics of a research loop")
	}
	for _, want := range []string{
		"Status       converged after " + strconv.Itoa(c.Iteration) + " iterations",
		"Tokens       " + strconv.FormatInt(rep.Usage.Tokens, 10) + " in all (per iteration above)",
		"Coverage     " + cov + "  0.00 → ",
		"(threshold 0.70)", "(threshold 0.80)",
		"  tokens      " + strconv.FormatInt(rep.Usage.Tokens, 10) + " of 20000 (",
		"Stop         converged (success)",
		"Reason       " + c.Reason,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the history does not say %q:\n%s", want, r.stdout)
		}
	}
	if rep.Usage.Tokens == 0 || len(rep.History.Recent) < 3 {
		t.Fatalf("the toy loop spent %d tokens in %d records", rep.Usage.Tokens, len(rep.History.Recent))
	}

	t.Run("no_sparklines_off_a_terminal", func(t *testing.T) {
		if r := inspect(t, dir, "converged"); strings.Contains(r.stdout, cov) || r.code != exitOK {
			t.Errorf("sparklines printed to a pipe without --spark (exit %d):\n%s", r.code, r.stdout)
		}
	})
	t.Run("partial", func(t *testing.T) {
		r := inspect(t, dir, "partial")
		for _, want := range []string{"Stop         max_iterations (stopped for good)", "Unmet        coverage ", "  iterations  2 of 2 (100%)"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("does not say %q:\n%s", want, r.stdout)
			}
		}
	})
	t.Run("escalated", func(t *testing.T) {
		c, _ := report(t, dir, "escalated")
		r := inspect(t, dir, "escalated")
		if !strings.Contains(r.stdout, "Question     "+oneLine(c.Question)) || !strings.Contains(r.stdout, "(not final: a resume continues)") {
			t.Errorf("the escalation's question %q is not shown:\n%s", c.Question, r.stdout)
		}
	})
	t.Run("json", func(t *testing.T) {
		r := inspect(t, "--json", dir, "converged")
		var got sessionJSON
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != exitOK {
			t.Fatalf("exit %d, %v\n%s", r.code, err, r.stdout)
		}
		if diff := cmp.Diff(rep.History.Recent, got.History); diff != "" {
			t.Errorf("history mismatch (-want +got):\n%s", diff)
		}
		if got.Usage != rep.Usage || got.Limits != limits || got.Thresholds.Coverage != 0.7 || got.Settings["token limit"] != "20000" || got.Generation != c.Generation {
			t.Errorf("got %+v", got)
		}
	})
}

// TestE2EDamaged: a session shown from an older generation says what is
// damaged; one without a readable generation fails, saying why. Nothing is
// quarantined.
func TestE2EDamaged(t *testing.T) {
	dir := sessions(t)
	before := tree(t, dir)
	bad := newestOnDisk(t, dir, "fallback")
	r := inspect(t, dir, "fallback")
	want := "generation " + strconv.FormatUint(bad, 10) + " (" + genPath(dir, "fallback", bad) + ") is damaged: checkpoint: corrupt: truncated"
	if r.code != exitOK || !strings.Contains(r.stderr, "inspect: warning: "+want) || !strings.Contains(r.stdout, "Damage       "+want) ||
		!strings.Contains(r.stdout, "(generation "+strconv.FormatUint(bad-1, 10)+",") {
		t.Errorf("exit %d, want 0, the damage of generation %d, and generation %d shown\n%s%s", r.code, bad, bad-1, r.stdout, r.stderr)
	}
	r = inspect(t, dir, "broken")
	if r.code != exitError || !strings.Contains(r.stderr, `inspect: session "broken" has no readable generation:`) || !strings.Contains(r.stderr, "bad magic number, not a checkpoint") {
		t.Errorf("broken: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if diff := cmp.Diff(before, tree(t, dir)); diff != "" {
		t.Errorf("inspect changed the directory (-before +after):\n%s", diff)
	}
	t.Run("damaged_engine_record", func(t *testing.T) {
		// An intact checkpoint whose engine record does not decode.
		c, _ := report(t, dir, "partial")
		c.Generation++
		c.Engine = []byte("{garbage")
		data, err := checkpoint.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(genPath(dir, "partial", c.Generation), data, 0o600); err != nil {
			t.Fatal(err)
		}
		r := inspect(t, dir, "partial")
		if r.code != exitOK || !strings.Contains(r.stdout, "is damaged: iterate: inspecting session \"partial\": decoding the engine record: checkpoint: corrupt generation") {
			t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}

// TestE2ERunning: a session whose loop is running (holding its lock) is
// listed and shown, and keeps its lock.
func TestE2ERunning(t *testing.T) {
	dir := t.TempDir()
	gate := make(chan struct{})
	saved := make(chan struct{}, 16)
	done := make(chan *iterate.Result[notes], 1)
	go func() {
		res, _ := iterate.New(toy{gate: gate},
			iterate.WithCheckpointer(checkpoint.NewDir(dir)), iterate.WithSession("live"),
			iterate.WithMaxIterations(8),
			iterate.WithObserver(func(e iterate.Event) {
				if _, ok := e.(iterate.CheckpointSaved); ok {
					saved <- struct{}{}
				}
			}),
		).Run(context.Background(), notes{})
		done <- res
	}()
	// The first iteration's checkpoint, then the loop waits in iteration 2.
	select {
	case <-saved:
	case <-time.After(30 * time.Second):
		close(gate)
		<-done
		t.Fatal("no checkpoint saved")
	}
	list := inspect(t, dir)
	show := inspect(t, dir, "live")
	_, _, lockErr := checkpoint.NewDir(dir).Lock(context.Background(), "live")
	close(gate)
	res := <-done
	if row := fields(list.stdout)["live"]; len(row) < 2 || row[1] != "running" || list.code != exitOK {
		t.Errorf("listing of a running session: exit %d\n%s%s", list.code, list.stdout, list.stderr)
	}
	if show.code != exitOK || !strings.Contains(show.stdout, "Stop         running: not stopped") {
		t.Errorf("history of a running session: exit %d\n%s%s", show.code, show.stdout, show.stderr)
	}
	if !errors.Is(lockErr, checkpoint.ErrLocked) {
		t.Errorf("Lock while the loop ran: %v, want ErrLocked (inspect must not take or break the lock)", lockErr)
	}
	if res == nil || res.Status != iterate.Converged {
		t.Errorf("the loop ended with %+v, want converged", res)
	}
}

func TestE2EHTML(t *testing.T) {
	dir := sessions(t)
	_, rep := report(t, dir, "partial")
	page := filepath.Join(t.TempDir(), "partial.html")
	r := inspect(t, "--html", page, dir, "partial")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(data)
	checkPage(t, html, rep, "coverage", "confidence")
	for _, want := range []string{`<span class="status stop" id="status">max_iterations</span>`, `<ul id="unmet"><li>coverage `,
		`data-resource="tokens"`, `data-resource="iterations"`, `<td>token limit</td><td class="s">20000</td>`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	t.Run("screenshot", func(t *testing.T) { screenshot(t, page) })
}

// checkPage checks that the page is self-contained and that it charts
// metrics, in order, each chart plotting the history's values against the
// metric's threshold where it has one.
func checkPage(t *testing.T, html string, rep *iterate.Report, metrics ...string) {
	t.Helper()
	for _, banned := range []string{"<script", "<link", "<img", "<iframe", "<object", "<embed", "url(", "@import", "https://"} {
		if strings.Contains(strings.ToLower(html), banned) {
			t.Errorf("the page is not self-contained: it has %q", banned)
		}
	}
	if tag := regexp.MustCompile(`(?i)<[a-z][^>]*\s(src|href)\s*=[^>]*>`).FindString(html); tag != "" {
		t.Errorf("the page is not self-contained: it has %s", tag)
	}
	if n := strings.Count(html, "http://"); n != strings.Count(html, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Errorf("the page refers to %d http:// addresses besides the SVG namespace", n)
	}
	want := map[string][]float64{}
	wantT := map[string][]float64{}
	var order []string
	for _, name := range metrics {
		order = append(order, name)
		for i := range rep.History.Recent {
			if v, ok := valueOf(&rep.History.Recent[i], name); ok {
				want[name] = append(want[name], v)
			}
		}
		if v, ok := thresholdOf(rep, name); ok {
			wantT[name] = []float64{v}
		}
	}
	var charts []string
	for _, m := range regexp.MustCompile(`<svg class="chart" data-metric="([^"]*)"`).FindAllStringSubmatch(html, -1) {
		charts = append(charts, m[1])
	}
	if diff := cmp.Diff(order, charts); diff != "" {
		t.Errorf("the charts are not those of the metrics (-metrics +page):\n%s", diff)
	}
	got := map[string][]float64{}
	for _, m := range regexp.MustCompile(`<polyline class="series" data-series="([^"]*)" data-values="([^"]*)"`).FindAllStringSubmatch(html, -1) {
		got[m[1]] = floats(t, m[2])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the polylines' values differ from the history (-history +page):\n%s", diff)
	}
	dots := map[string][]float64{}
	for _, m := range regexp.MustCompile(`<circle [^>]*data-series="([^"]*)" data-iteration="\d+" data-value="([^"]*)"`).FindAllStringSubmatch(html, -1) {
		dots[m[1]] = append(dots[m[1]], floats(t, m[2])...)
	}
	if diff := cmp.Diff(want, dots); diff != "" {
		t.Errorf("the points' values differ from the history (-history +page):\n%s", diff)
	}
	thresholds := map[string][]float64{}
	for _, m := range regexp.MustCompile(`<line class="threshold" data-series="([^"]*)" data-value="([^"]*)"`).FindAllStringSubmatch(html, -1) {
		thresholds[m[1]] = floats(t, m[2])
	}
	if diff := cmp.Diff(wantT, thresholds); diff != "" {
		t.Errorf("thresholds mismatch (-settings +page):\n%s", diff)
	}
}

func floats(t *testing.T, s string) []float64 {
	t.Helper()
	var out []float64
	for _, f := range strings.Fields(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("value %q: %v", f, err)
		}
		out = append(out, v)
	}
	return out
}

// screenshot renders the page with a headless Chromium, when the machine
// has one, and checks that the picture is not blank and shows both series.
func screenshot(t *testing.T, page string) {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "page.png")
	e2etest.Chromium(t, []string{"--screenshot=" + shot, "--window-size=1000,800"}, "file://"+page)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1000 || b.Dy() != 800 {
		t.Errorf("screenshot of %v, want 1000×800", b)
	}
	nonWhite, colors := 0, map[[3]uint32]bool{}
	var coverage, confidence int
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			c := rgb(img, x, y)
			colors[c] = true
			if c != [3]uint32{255, 255, 255} {
				nonWhite++
			}
			if near(c, [3]uint32{0x1f, 0x77, 0xb4}) {
				coverage++
			}
			if near(c, [3]uint32{0xd9, 0x5f, 0x02}) {
				confidence++
			}
		}
	}
	total := img.Bounds().Dx() * img.Bounds().Dy()
	t.Logf("screenshot: %d colours, %.1f%% not white, %d coverage and %d confidence pixels", len(colors), 100*float64(nonWhite)/float64(total), coverage, confidence)
	if len(colors) < 16 || nonWhite < total/50 {
		t.Errorf("the screenshot looks blank: %d colours, %d of %d pixels not white", len(colors), nonWhite, total)
	}
	if coverage < 200 || confidence < 200 {
		t.Errorf("the chart's lines are not visible: %d coverage and %d confidence pixels", coverage, confidence)
	}
}

func rgb(img image.Image, x, y int) [3]uint32 {
	r, g, b, _ := img.At(x, y).RGBA()
	return [3]uint32{r >> 8, g >> 8, b >> 8}
}

// near reports whether two colours are within a small distance.
func near(a, b [3]uint32) bool {
	d := func(x, y uint32) uint32 { return max(x, y) - min(x, y) }
	return d(a[0], b[0]) < 24 && d(a[1], b[1]) < 24 && d(a[2], b[2]) < 24
}
