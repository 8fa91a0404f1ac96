package main

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestNiceAxisPutsAboutFiveTicksOnOneTwoFiveSteps(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi float64
		want   []float64
	}{
		{"a queue of up to 7 keys", 0, 7, []float64{0, 2, 4, 6, 8}},
		{"a rate up to 100/s", 0, 100, []float64{0, 20, 40, 60, 80, 100}},
		{"a latency up to 1s", 0, 1, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{"a p99 of a few milliseconds", 0, 0.0042, []float64{0, 0.001, 0.002, 0.003, 0.004, 0.005}},
		{"steps of 0.1 are exact decimals", 0.3, 0.7, []float64{0.3, 0.4, 0.5, 0.6, 0.7}},
		{"thousands step by 500", 0, 1800, []float64{0, 500, 1000, 1500, 2000}},
		{"millions step by a million", 0, 3.4e6, []float64{0, 1e6, 2e6, 3e6, 4e6}},
		{"a range across zero", -3, 4, []float64{-4, -2, 0, 2, 4}},
		{"bounds given in reverse", 7, 0, []float64{0, 2, 4, 6, 8}},
		{"a flat zero becomes 0 to 1", 0, 0, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{"a flat value gets room around it", 50, 50, []float64{44, 46, 48, 50, 52, 54, 56}},
		{"no data becomes 0 to 1", math.NaN(), math.Inf(1), []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ax := niceAxis(tt.lo, tt.hi, 5)
			if !slices.Equal(ax.Ticks, tt.want) {
				t.Fatalf("got ticks %v, want %v", ax.Ticks, tt.want)
			}
			if ax.Min != tt.want[0] || ax.Max != tt.want[len(tt.want)-1] {
				t.Errorf("got axis [%v, %v], want [%v, %v]", ax.Min, ax.Max, tt.want[0], tt.want[len(tt.want)-1])
			}
			if ax.Step != tt.want[1]-tt.want[0] && math.Abs(ax.Step-(tt.want[1]-tt.want[0])) > 1e-12 {
				t.Errorf("got step %v, want %v", ax.Step, tt.want[1]-tt.want[0])
			}
		})
	}
}

func TestNiceAxisAlwaysCoversItsInput(t *testing.T) {
	for _, r := range [][2]float64{{0, 0.37}, {0.001, 0.0011}, {12, 1234567}, {-0.5, 0.5}, {1e-9, 3e-9}, {99, 101}} {
		ax := niceAxis(r[0], r[1], 5)
		if ax.Min > r[0] || ax.Max < r[1] {
			t.Errorf("got axis [%v, %v] for data [%v, %v], want it to cover the data", ax.Min, ax.Max, r[0], r[1])
		}
		if n := len(ax.Ticks); n < 3 || n > 8 {
			t.Errorf("got %d ticks %v for [%v, %v], want about 5", n, ax.Ticks, r[0], r[1])
		}
	}
}

func TestFormatValueLabelsTicksCompactly(t *testing.T) {
	tests := []struct {
		name    string
		v, step float64
		want    string
	}{
		{"zero", 0, 0.25, "0"},
		{"a quarter", 0.25, 0.05, "0.25"},
		{"milliseconds stay in seconds", 0.004, 0.001, "0.004"},
		{"tenths on a 0.2 step drop trailing zeros", 0.4, 0.2, "0.4"},
		{"whole numbers have no decimals", 6, 2, "6"},
		{"below a thousand stays plain", 500, 500, "500"},
		{"a thousand and a half", 1500, 500, "1.5k"},
		{"a round thousand", 1000, 500, "1k"},
		{"two million", 2e6, 1e6, "2M"},
		{"two and a half million", 2.5e6, 5e5, "2.5M"},
		{"billions", 3e9, 1e9, "3G"},
		{"negative values keep their sign", -1500, 500, "-1.5k"},
		{"float noise does not show", 0.30000000000000004, 0.1, "0.3"},
		{"an unknown step gives 3 significant digits", 1234, 0, "1.23k"},
		{"NaN is spelled out", math.NaN(), 1, "NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatValue(tt.v, tt.step); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEveryTickOfANiceAxisHasADistinctLabel(t *testing.T) {
	for _, r := range [][2]float64{{0, 0.0042}, {0, 1800}, {0, 3.4e6}, {0, 0.37}, {990, 1010}} {
		ax := niceAxis(r[0], r[1], 5)
		seen := map[string]bool{}
		for _, v := range ax.Ticks {
			label := formatValue(v, ax.Step)
			if seen[label] {
				t.Errorf("got label %q twice on axis %v", label, ax.Ticks)
			}
			seen[label] = true
		}
	}
}

func TestTimeTicksFallOnRoundUTCTimes(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name       string
		start, end string
		maxTicks   int
		want       []string
	}{
		{
			name:  "fifteen minutes in steps of five",
			start: "2025-11-22T14:45:10Z", end: "2025-11-22T15:00:10Z", maxTicks: 6,
			want: []string{"14:50:00", "14:55:00", "15:00:00"},
		},
		{
			name:  "ten minutes in steps of two",
			start: "2025-11-22T14:50:00Z", end: "2025-11-22T15:00:00Z", maxTicks: 6,
			want: []string{"14:50:00", "14:52:00", "14:54:00", "14:56:00", "14:58:00", "15:00:00"},
		},
		{
			name:  "a minute in steps of fifteen seconds",
			start: "2025-11-22T14:59:07Z", end: "2025-11-22T15:00:07Z", maxTicks: 5,
			want: []string{"14:59:15", "14:59:30", "14:59:45", "15:00:00"},
		},
		{
			name:  "an end in another zone is labelled in UTC",
			start: "2025-11-22T16:00:00+01:00", end: "2025-11-22T17:00:00+01:00", maxTicks: 3,
			want: []string{"15:00:00", "15:30:00", "16:00:00"},
		},
		{
			name:  "an empty range has no ticks",
			start: "2025-11-22T15:00:00Z", end: "2025-11-22T15:00:00Z", maxTicks: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, tick := range timeTicks(at(tt.start), at(tt.end), tt.maxTicks) {
				got = append(got, tick.Format("15:04:05"))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTimeTicksOverManyDaysStayWithinTheLimit(t *testing.T) {
	start := time.Date(2025, 11, 1, 0, 0, 0, 0, time.UTC)
	ticks := timeTicks(start, start.Add(30*24*time.Hour), 6)
	if len(ticks) < 2 || len(ticks) > 6 {
		t.Errorf("got %d ticks, want 2 to 6", len(ticks))
	}
}
