package experiment

// Chart is an experiment's main result as a plot, for the front ends that
// draw (the notebook UI, Jupyter): series of points over a numeric x axis,
// or, with Bars, grouped bars over categories.
type Chart struct {
	Title  string        `json:"title"`
	XTitle string        `json:"x_title"`
	YTitle string        `json:"y_title"`
	LogX   bool          `json:"log_x,omitempty"`
	Bars   bool          `json:"bars,omitempty"` // x is Point.Label, a category
	Series []ChartSeries `json:"series"`
}

// ChartSeries is one named line or set of bars.
type ChartSeries struct {
	Name   string       `json:"name"`
	Points []ChartPoint `json:"points"`
}

// ChartPoint is one point: X on a numeric axis, or Label for a bar.
type ChartPoint struct {
	X     float64 `json:"x,omitempty"`
	Label string  `json:"label,omitempty"`
	Y     float64 `json:"y"`
}
