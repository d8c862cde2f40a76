// Package jupyter makes cachebook a Jupyter kernel: the Jupyter messaging
// protocol (version 5.3) over ZeroMQ, so that JupyterLab, Jupyter Notebook,
// VS Code, nbclient and papermill run cachebook cells unchanged.
//
// It is a transport beside package web: both subscribe to a shared
// kernel.Kernel, which queues, runs, interrupts and aborts the cells, so a
// cell runs the same way in the browser notebook, in `cachebook run` and in
// Jupyter; Kernel translates the shared kernel's frames into Jupyter
// messages. Kernel binds the five sockets named by a connection file
// (shell, control and stdin as ROUTER, iopub as PUB, heartbeat as a ROUTER
// echo), checks the HMAC-SHA256 signature of every incoming message as its
// frames are read, and closes (and logs) the connection of any message
// whose signature is wrong or that is larger than Config.MaxMessageBytes,
// before the message is queued or any of its JSON decoded (see
// DefaultMaxMessageBytes). An interrupt stops the running cell and aborts
// every execute request sent before it (status "aborted"); a cell that
// fails aborts the requests sent before its error could be seen, unless
// they set stop_on_error to false, as ipykernel does.
//
// Code cells are SQL by default. A first line of the form %%kind args runs
// a cachebook measurement cell instead (%%latency max=256M, %%bandwidth,
// %%sweep, %%experiment false-sharing threads=2); see notebook.ParseMagic.
//
// Results are sent as MIME bundles every Jupyter front end renders: result
// tables as text/html and text/plain, counters as HTML, and the latency
// curve, bandwidth bars and sweep as Vega-Lite charts
// (application/vnd.vegalite.v5+json) with an SVG fallback and a text
// summary. cachebook's own JSON forms (application/vnd.cachebook.*+json) stay
// in every bundle, so a notebook saved by Jupyter keeps the data.
package jupyter
