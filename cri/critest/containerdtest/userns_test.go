package containerdtest

import "testing"

// TestParseRelease reads the major and minor numbers of kernel releases as
// distributions spell them, and refuses what is not one.
func TestParseRelease(t *testing.T) {
	for _, tc := range []struct {
		release      string
		major, minor int
		ok           bool
	}{
		{"6.18.44-fc-v669", 6, 18, true},
		{"5.19.0-50-generic", 5, 19, true},
		{"5.4.0", 5, 4, true},
		{"6.1-rc3", 6, 1, true},
		{"6", 0, 0, false},
		{"x.y", 0, 0, false},
	} {
		major, minor, ok := parseRelease(tc.release)
		if major != tc.major || minor != tc.minor || ok != tc.ok {
			t.Errorf("parseRelease(%q) = %d, %d, %v; want %d, %d, %v", tc.release, major, minor, ok, tc.major, tc.minor, tc.ok)
		}
	}
}
