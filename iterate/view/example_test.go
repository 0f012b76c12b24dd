package view_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate/view"
)

// A host mounts the viewer under a prefix of its own service; here a GET
// of the listing is served by httptest.
func Example() {
	store := new(checkpoint.Memory)
	err := store.Save(context.Background(), &checkpoint.Checkpoint{Session: "report", Status: "escalated",
		Iteration: 3, Question: "Which of the two APIs is current?"})
	if err != nil {
		panic(err)
	}
	h, err := view.New(store, view.Metrics(view.Coverage, view.Confidence))
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/refine/", http.StripPrefix("/refine", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, err := http.Get(srv.URL + "/refine/?status=escalated")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.Status)
	fmt.Println(regexp.MustCompile(`\d+ of \d+ sessions`).FindString(string(body)))
	fmt.Println(regexp.MustCompile(`<div class="q">[^<]*</div>`).FindString(string(body)))
	// Output:
	// 200 OK
	// 1 of 1 sessions
	// <div class="q">Which of the two APIs is current?</div>
}
