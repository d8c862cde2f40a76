// toIpynb converts a notebook (the protocol's Notebook JSON) to nbformat
// v4.5, for when the server has no export endpoint.
export function toIpynb(nb) {
  const lines = (s) => {
    const parts = s.split("\n");
    return parts.map((l, i) => (i < parts.length - 1 ? l + "\n" : l)).filter((l, i) => l !== "" || i < parts.length - 1);
  };
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      kernelspec: { name: "cachebook", display_name: "cachebook SQL", language: "sql" },
      language_info: { name: "sql", mimetype: "application/sql", file_extension: ".sql", codemirror_mode: "sql" },
      title: nb.title || "",
    },
    cells: nb.cells.map((c) =>
      c.cell_type === "markdown"
        ? { id: c.id, cell_type: "markdown", metadata: {}, source: lines(c.source) }
        : {
            id: c.id,
            cell_type: "code",
            metadata: { cachebook: { kind: c.kind || "sql", attrs: c.attrs || {}, ...cellMeta(c.meta) }, ...hidden(c) },
            execution_count: null,
            outputs: (c.outputs || []).map(nbOutput),
            source: lines(c.source),
          },
    ),
  };
}

// hidden collapses a reference run that would answer the cell's
// prediction before a guess (notebook.Cell.HidesAnswer does the same).
function hidden(c) {
  const m = c.meta || {};
  const first = (c.outputs || [])[0];
  const ref = first && first.type === "stream" && String(first.text || "").startsWith("reference run on ");
  return m.predict && !m.guess && ref ? { jupyter: { outputs_hidden: true }, collapsed: true } : {};
}

// nbOutput converts a saved output ({type, name, text, html, data}, the
// notebook package's Output) to an nbformat output.
function nbOutput(o) {
  const split = (s) => (s || "").split(/(?<=\n)/);
  if (o.type === "stream") return { output_type: "stream", name: o.name || "stdout", text: split(o.text) };
  if (o.type === "error") return { output_type: "error", ename: o.name || "Error", evalue: o.text || "", traceback: [] };
  const data = { ...(o.data || {}) };
  if (o.text) data["text/plain"] = split(o.text);
  if (o.html) data["text/html"] = split(o.html);
  if (o.type === "display") return { output_type: "display_data", data, metadata: {} };
  return { output_type: "execute_result", execution_count: null, data, metadata: {} };
}

// cellMeta is a cell's metadata as notebook/ipynb.go exports it: under
// "meta", without the id and the timings (a prediction and the guess stay).
function cellMeta(meta) {
  const rest = { ...(meta || {}) };
  delete rest.id;
  delete rest.execution;
  return Object.keys(rest).length ? { meta: rest } : {};
}
