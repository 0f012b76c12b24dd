package study

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseQuestions checks that a question file never panics the parser,
// that an invalid one is an ErrQuestionFile, and that a valid one has a
// main question with keywords and questions with keywords.
func FuzzParseQuestions(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "*", "questions.txt"))
	for _, name := range append(files, "default.questions") {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	for _, s := range []string{
		"",
		"question: What does the cache do?\nwhat: is this\n",
		"question: What is it?\n",
		"question: How are [tokens issued?\n",
		"question: How are tokens issued? [Issue, ]\ncritical: Where? [Validate]\noptional: Who? []\n",
		"# only a comment\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		st, err := parseQuestions("q.txt", text)
		if err != nil {
			if !errors.Is(err, ErrQuestionFile) {
				t.Fatalf("error %v is not ErrQuestionFile", err)
			}
			return
		}
		if st.Question == "" || len(st.Topic) == 0 {
			t.Fatalf("accepted a study without a main question or keywords: %+v", st)
		}
		for _, q := range st.Questions {
			if q.Text == "" || len(q.Keywords) == 0 {
				t.Fatalf("accepted a question without text or keywords: %+v", q)
			}
		}
	})
}

// FuzzAgentReply checks that an agent's stdout never panics the reply
// parser nor the merge of its findings into the notes, and that merged
// findings have a key, a known impact and a confidence in (0, 1].
func FuzzAgentReply(f *testing.F) {
	for _, s := range []string{
		`{"findings":[{"description":"the watcher notifies subscribers","citations":["watch.go:12"],"confidence":0.8,"questions":[1]}],"files_analyzed":["watch.go"]}`,
		`{"findings":[{"id":"F001","description":"x","citations":[],"confidence":-1,"questions":[0,2,99]}],"resolved":[{"conflict":"C1","resolution":"r"}],"usage":{"tokens":-5,"cost":1e308}}`,
		`{"findings":[{"description":"","pattern":true,"impact":"huge","confidence":NaN}]}`,
		`not json`,
		``,
		`{"findings":null}`,
	} {
		f.Add([]byte(s))
	}
	notes := Notes{Questions: []Question{
		{Text: "How are subscribers notified?", Critical: true, Keywords: []Keyword{{Word: "notify"}, {Word: "subscriber"}}},
	}}
	notes.Findings = []Finding{{ID: "F001", Key: "def:watch", Kind: KindDefinition, Description: "watcher", Impact: "critical"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		reply, err := parseReply(data)
		if err != nil {
			if !strings.Contains(err.Error(), "reply is not a JSON findings object") {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		part := (&researcher{}).fromReply(&notes, reply)
		for _, f := range part.Findings {
			if f.Key == "" {
				t.Fatalf("finding without a key: %+v", f)
			}
			switch f.Impact {
			case "critical", "important", "informational":
			default:
				t.Fatalf("finding with impact %q", f.Impact)
			}
			for _, c := range f.Claims {
				if !(c.Confidence > 0 && c.Confidence <= 1) {
					t.Fatalf("claim with confidence %v", c.Confidence)
				}
			}
			for _, tag := range f.Tags {
				if tag.Question < 0 || tag.Question >= len(notes.Questions) {
					t.Fatalf("tag of question %d (of %d)", tag.Question, len(notes.Questions))
				}
			}
		}
	})
}
