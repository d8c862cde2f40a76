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
            metadata: { cachebook: { kind: c.kind || "sql", attrs: c.attrs || {} } },
            execution_count: null,
            outputs: c.outputs || [],
            source: lines(c.source),
          },
    ),
  };
}
