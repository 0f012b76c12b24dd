package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestRiverUI guards issue 31, item 15: with --riverui a fleet's viewer
// serves riverui under /riverui/ (none without it): its API answers with
// the session's River job, and its pages load; each session's page links
// to its own job there; riverui is behind the viewer's checks: a request
// naming another host (DNS rebinding) is refused on its paths, as is a
// cross-origin POST of one of its actions. Mutations caught: riverui not
// mounted (404), mounted without --riverui, the link naming another job
// (the fleet's job ID not read, or the link's path wrong), riverui mounted
// without the host check (a rebound name served), or without the origin
// check (a cross-site cancel reaching riverui).
func TestRiverUI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, dbURL, schema := escalatedPlan(ctx, t, "ticket-7", "T-7", "", nil)
	jobID := completedJob(ctx, t, dbURL, schema, "ticket-7")
	state := "completed"
	jobOf := func() {
		t.Helper()
		jobID, state = jobState(ctx, t, dbURL, schema, "ticket-7")
	}
	linkRE := regexp.MustCompile(`<tr class="link"><th>Job</th><td><a href="([^"]*)">job (\d+) in riverui \(([a-z]+)[^)]*\)</a></td></tr>`)

	off := server(t, "--db", dbURL, "--fleet-schema", schema)
	if code, _ := fetch(t, off+"/riverui/api/jobs/"+fmt.Sprint(jobID)); code != http.StatusNotFound {
		t.Errorf("riverui without --riverui: %d, want 404", code)
	}
	if _, body := fetch(t, off+"/session/ticket-7"); linkRE.MatchString(body) {
		t.Error("a link to riverui without --riverui")
	}

	base := server(t, "--db", dbURL, "--fleet-schema", schema, "--riverui")
	page := base + "/session/ticket-7"
	_, body := fetch(t, page)
	m := linkRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no link to the session's job on its page: %s", regexp.MustCompile(`(?s)<table id="summary">.*?</table>`).FindString(body))
	}
	if m[2] != fmt.Sprint(jobID) || m[3] != state {
		t.Errorf("the page links to job %s (%s), want the session's job %d (%s)", m[2], m[3], jobID, state)
	}
	pu, _ := url.Parse(page)
	ref, err := url.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	jobPage := pu.ResolveReference(ref)
	if want := "/riverui/jobs/" + fmt.Sprint(jobID); jobPage.Path != want {
		t.Errorf("the link %q leads to %s, want %s", m[1], jobPage.Path, want)
	}
	// riverui's page of the job (its application, which asks the API).
	if code, body := fetch(t, jobPage.String()); code != http.StatusOK || !strings.Contains(body, "<html") {
		t.Errorf("riverui's page of the job: %d %.200q", code, body)
	}
	// riverui's API: the job the page links to is the session's.
	code, body := fetch(t, base+"/riverui/api/jobs/"+fmt.Sprint(jobID))
	var job struct {
		ID   json.Number `json:"id"`
		Args string      `json:"args"` // the job's arguments, encoded
	}
	var args struct {
		Session string `json:"session"`
	}
	err = json.Unmarshal([]byte(body), &job)
	if err == nil {
		err = json.Unmarshal([]byte(job.Args), &args)
	}
	if code != http.StatusOK || err != nil || job.ID.String() != fmt.Sprint(jobID) || args.Session != "ticket-7" {
		t.Errorf("riverui's API of job %d: %d %v %+v\n%.300s", jobID, code, err, job, body)
	}

	// The viewer's checks cover riverui's paths.
	do := func(method, path, host string, hdr map[string]string, body string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	for _, path := range []string{"/riverui/", "/riverui/jobs/" + fmt.Sprint(jobID), "/riverui/api/jobs/" + fmt.Sprint(jobID), "/riverui"} {
		if code := do(http.MethodGet, path, "rebound.example", nil, ""); code != http.StatusForbidden {
			t.Errorf("GET %s naming host rebound.example: %d, want 403", path, code)
		}
	}
	// A retry would run the completed job again.
	retry := fmt.Sprintf(`{"ids":["%d"]}`, jobID)
	if code := do(http.MethodPost, "/riverui/api/jobs/retry", "", map[string]string{"Content-Type": "application/json",
		"Origin": "http://rebound.example", "Sec-Fetch-Site": "cross-site"}, retry); code != http.StatusForbidden {
		t.Errorf("a cross-site POST to riverui's retry: %d, want 403", code)
	}
	if jobOf(); state != "completed" {
		t.Errorf("after the refused cross-site retry the job is %s, was completed", state)
	}
}

// jobState returns the ID and the state of session's River job in the
// fleet of schema, read from River's table: the tests' own oracle, not the
// fleet's.
func jobState(ctx context.Context, t *testing.T, dbURL, schema, session string) (id int64, state string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctx, `SELECT id, state::text FROM `+pgx.Identifier{schema, "river_job"}.Sanitize()+
		` WHERE args->>'session' = $1`, session).Scan(&id, &state); err != nil {
		t.Fatal(err)
	}
	return id, state
}

// completedJob waits until the River job of session, escalated, is
// completed (once its worker let it go) and returns its ID.
func completedJob(ctx context.Context, t *testing.T, dbURL, schema, session string) int64 {
	t.Helper()
	for {
		id, state := jobState(ctx, t, dbURL, schema, session)
		if state == "completed" {
			return id
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the escalated session's job stays %s", state)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
