package sandbox

import "testing"

func TestClaimsUserID(t *testing.T) {
	c := Claims(123, "ada")
	if c["userId"] != any(123) {
		t.Errorf("Claims(123, \"ada\")[\"userId\"] = %#v, want %#v", c["userId"], 123)
	}
}

func TestClaimsName(t *testing.T) {
	got, _ := Claims(123, "ada")["name"].(string)
	if got != "ada" {
		t.Errorf("got %q, want %q", got, "ada")
	}
}

func TestGreeting(t *testing.T) {
	if got := Greeting("ada"); got != "Hello, ada!" {
		t.Errorf("expected: %q, received: %q", "Hello, ada!", got)
	}
}
