package kernel

import (
	"cachebook/engine"
	"cachebook/notebook/predict"
)

// MIME types of the data bundles the kernel produces.
const (
	MIMEText        = "text/plain"
	MIMEResult      = "application/vnd.cachebook.result+json"
	MIMEMeasurement = "application/vnd.cachebook.measurement+json"
	MIMEProgress    = "application/vnd.cachebook.progress+json"
	MIMECounters    = "application/vnd.cachebook.counters+json"
)

// Reply statuses.
const (
	StatusOK      = "ok"
	StatusError   = "error"
	StatusAborted = "aborted"
)

// Error names (ename) of error messages.
const (
	ErrSQL         = "SQLError"
	ErrInterrupted = "Interrupted"
	ErrTimeout     = "Timeout"
	ErrMemoryLimit = "MemoryLimit"
	ErrUnknownKind = "UnknownKind"
	ErrExecution   = "ExecutionError"
	ErrKernel      = "KernelError"
	ErrBadMessage  = "BadMessage"
	ErrQueueFull   = "QueueFull"
	// ErrUnavailable: this runtime cannot run the cell as asked (e.g.
	// more threads than the browser has); another runtime can.
	ErrUnavailable = "Unavailable"
)

// ExecuteRequest is the content of an execute_request.
type ExecuteRequest struct {
	Code         string            `json:"code"`
	Kind         string            `json:"kind,omitempty"`
	Attrs        map[string]string `json:"attrs,omitempty"`
	CellID       string            `json:"cell_id,omitempty"`
	Silent       bool              `json:"silent,omitempty"`
	StoreHistory *bool             `json:"store_history,omitempty"`
	// StopOnError, when true, makes a failure of this (non-silent) cell
	// abort the execute requests queued when its reply goes out
	// (ipykernel's stop_on_error; see ManagerConfig.StopOnErrorWait).
	// Absent means false.
	StopOnError *bool `json:"stop_on_error,omitempty"`
	// Predict is the cell's prediction and Guess the learner's committed
	// guess (the "predict" and "guess" members of the cell's metadata);
	// with Predict set the kernel emits a prediction display after the run.
	Predict *predict.Spec  `json:"predict,omitempty"`
	Guess   *predict.Guess `json:"guess,omitempty"`
}

// Timings is the time a cell spent waiting for admission and running.
type Timings struct {
	QueuedNs int64 `json:"queued_ns"`
	RunNs    int64 `json:"run_ns"`
	TotalNs  int64 `json:"total_ns"`
}

// ExecuteReply is the content of an execute_reply.
type ExecuteReply struct {
	Status         string   `json:"status"`
	ExecutionCount int      `json:"execution_count"`
	CellID         string   `json:"cell_id,omitempty"`
	Timings        *Timings `json:"timings,omitempty"`
	Ename          string   `json:"ename,omitempty"`
	Evalue         string   `json:"evalue,omitempty"`
}

// ExecuteInput is the content of an execute_input broadcast.
type ExecuteInput struct {
	Code           string `json:"code"`
	Kind           string `json:"kind"`
	CellID         string `json:"cell_id,omitempty"`
	ExecutionCount int    `json:"execution_count"`
}

// Status is the content of a status message.
type Status struct {
	ExecutionState string `json:"execution_state"`
	QueuePosition  int    `json:"queue_position,omitempty"`
	// ExpectedWaitNs estimates how long a queued cell waits, when the
	// kernel can tell (0: unknown).
	ExpectedWaitNs int64 `json:"expected_wait_ns,omitempty"`
	// Shared is set on a queued cell that waits for another session's
	// run of the same measurement, which it will share.
	Shared bool `json:"shared,omitempty"`
}

// Stream is the content of a stream message.
type Stream struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// Transient holds the display id of a display_data or update_display_data.
type Transient struct {
	DisplayID string `json:"display_id"`
}

// DisplayData is the content of display_data and update_display_data.
type DisplayData struct {
	Data      map[string]any `json:"data"`
	Metadata  map[string]any `json:"metadata"`
	Transient *Transient     `json:"transient,omitempty"`
}

// ExecuteResult is the content of an execute_result.
type ExecuteResult struct {
	ExecutionCount int            `json:"execution_count"`
	CellID         string         `json:"cell_id,omitempty"`
	Data           map[string]any `json:"data"`
	Metadata       map[string]any `json:"metadata"`
}

// Position is a position in a cell's code: 1-based line, 1-based column in
// runes and 0-based byte offset.
type Position struct {
	Line   int `json:"line"`
	Col    int `json:"col"`
	Offset int `json:"offset"`
}

// ErrorContent is the content of an error message.
type ErrorContent struct {
	Ename          string    `json:"ename"`
	Evalue         string    `json:"evalue"`
	Traceback      []string  `json:"traceback"`
	Position       *Position `json:"position,omitempty"`
	StatementIndex *int      `json:"statement_index,omitempty"`
	CellID         string    `json:"cell_id,omitempty"`
	ExecutionCount int       `json:"execution_count,omitempty"`
}

// InterruptReply is the content of an interrupt_reply.
type InterruptReply struct {
	Status      string `json:"status"`
	Interrupted bool   `json:"interrupted"`
	Dropped     int    `json:"dropped"`
}

// ShutdownRequest is the content of a shutdown_request.
type ShutdownRequest struct {
	Restart bool `json:"restart"`
}

// ShutdownReply is the content of a shutdown_reply.
type ShutdownReply struct {
	Status        string `json:"status"`
	Restart       bool   `json:"restart"`
	KernelSession string `json:"kernel_session,omitempty"`
}

// LanguageInfo describes the kernel's main language.
type LanguageInfo struct {
	Name           string `json:"name"`
	Mimetype       string `json:"mimetype"`
	FileExtension  string `json:"file_extension"`
	CodemirrorMode string `json:"codemirror_mode"`
}

// LimitsInfo is the public view of the kernel's limits.
type LimitsInfo struct {
	MaxRows         int   `json:"max_rows"`
	MaxResultBytes  int   `json:"max_result_bytes"`
	CellTimeoutMs   int64 `json:"cell_timeout_ms"`
	QueryMemory     int64 `json:"query_memory"`
	MaxMessageBytes int   `json:"max_message_bytes"`
	UpdateRateHz    int   `json:"update_rate_hz"`
	CellMemory      int64 `json:"cell_memory"`
	Threads         int   `json:"threads,omitempty"`
}

// KernelInfoReply is the content of a kernel_info_reply.
type KernelInfoReply struct {
	Status                string       `json:"status"`
	ProtocolVersion       string       `json:"protocol_version"`
	Implementation        string       `json:"implementation"`
	ImplementationVersion string       `json:"implementation_version"`
	LanguageInfo          LanguageInfo `json:"language_info"`
	Banner                string       `json:"banner"`
	CellKinds             []string     `json:"cell_kinds"`
	Kinds                 []KindInfo   `json:"kinds"`
	Runtime               string       `json:"runtime"`
	Limits                LimitsInfo   `json:"limits"`
	ExecutionState        string       `json:"execution_state"`
	ExecutionCount        int          `json:"execution_count"`
}

// Welcome is the content of the welcome message that opens every
// connection.
type Welcome struct {
	Protocol       string `json:"protocol"`
	Session        string `json:"session"`
	KernelSession  string `json:"kernel_session"`
	LastSeq        uint64 `json:"last_seq"`
	OldestSeq      uint64 `json:"oldest_seq"`
	ReplayFrom     uint64 `json:"replay_from"`
	Missed         bool   `json:"missed"`
	ExecutionState string `json:"execution_state"`
	Queued         int    `json:"queued"`
	ExecutionCount int    `json:"execution_count"`
}

// ProtocolError is the content of a protocol_error.
type ProtocolError struct {
	Ename  string `json:"ename"`
	Evalue string `json:"evalue"`
}

// ResultColumn is a column of a result table: its name and SQL type.
type ResultColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// StatementResult is one statement's result in a result bundle.
type StatementResult struct {
	Statement string         `json:"statement"`
	Columns   []ResultColumn `json:"columns"`
	// Rows are the first rows of the result, each value formatted by the
	// engine; nil is SQL NULL.
	Rows      [][]*string      `json:"rows"`
	RowCount  int              `json:"row_count"`
	Truncated bool             `json:"truncated"`
	Message   string           `json:"message,omitempty"`
	ElapsedNs int64            `json:"elapsed_ns"`
	Plan      *engine.PlanNode `json:"plan,omitempty"`
}

// ResultBundle is the value of the application/vnd.cachebook.result+json
// entry of an SQL cell's execute_result.
type ResultBundle struct {
	Statements []StatementResult `json:"statements"`
	Timings    *Timings          `json:"timings,omitempty"`
	// Counters is the cell's measurement JSON (docs/measurement-json.md),
	// when counters were collected.
	Counters any `json:"counters,omitempty"`
	// Rounds holds, for a cell run several times (attribute reps=N), the
	// elapsed time of each statement in each timed round, in order; the
	// statements above are the last round's.
	Rounds [][]int64 `json:"rounds,omitempty"`
}

// Progress is the value of an application/vnd.cachebook.progress+json
// display.
type Progress struct {
	Done  int64 `json:"done"`
	Total int64 `json:"total"`
	// Unit says what Done and Total count: rows, sizes, runs, points.
	Unit      string `json:"unit,omitempty"`
	ElapsedNs int64  `json:"elapsed_ns"`
}
