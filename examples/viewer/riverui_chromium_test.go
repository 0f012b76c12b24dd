//go:build unix

package main

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestChromiumRiverUI guards issue 31, item 15, in a browser: on a fleet
// session's page (--riverui) an operator clicks the link to its job, and
// riverui's application, served behind the viewer's checks and headers,
// runs and shows that job (its ID, its kind and the session in its
// arguments). Mutations caught: the link naming another job or path (the
// page shows another job, or none), riverui not mounted, or its scripts
// refused by the headers it is served with (nothing rendered).
func TestChromiumRiverUI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, dbURL, schema := escalatedPlan(ctx, t, "ticket-3", "T-3", "", nil)
	id := completedJob(ctx, t, dbURL, schema, "ticket-3")
	base := server(t, "--db", dbURL, "--fleet-schema", schema, "--riverui")
	page := startBrowser(t).newTab(ctx, t)
	page.navigate(base + "/session/ticket-3")
	page.waitFor("the link to the job", `document.querySelector('#summary tr.link a')`)
	page.screenshot("riverui-link.png")
	page.click(`#summary tr.link a`)
	page.waitFor("riverui's page of the job", fmt.Sprintf(`location.pathname === '/riverui/jobs/%d' && document.body &&
		document.body.innerText.includes('refine_session') && document.body.innerText.includes('ticket-3')`, id))
	page.screenshot("riverui-job.png")
}
