// StaticBackend stands in for the server on a site that `cachebook site`
// wrote (index.html carries <meta name="cachebook-static">): no process
// answers behind it, so the lessons are files beside the page
// (lessons/index.json, lessons/ID.json, the server's lesson_list and
// lesson_open replies) and the reader's notebooks live in this browser's
// IndexedDB. Cells run in the page's own WebAssembly kernel.

const DB_NAME = "cachebook";
const STORE = "notebooks";

function idb() {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open(DB_NAME, 1);
    r.onupgradeneeded = () => r.result.createObjectStore(STORE, { keyPath: "path" });
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(new Error("this browser refused its storage (IndexedDB): " + (r.error && r.error.message)));
  });
}

// tx runs f on the notebooks store and resolves with its request's result.
async function tx(mode, f) {
  const db = await idb();
  return new Promise((resolve, reject) => {
    const t = db.transaction(STORE, mode);
    const req = f(t.objectStore(STORE));
    t.oncomplete = () => resolve(req.result);
    t.onerror = t.onabort = () => {
      const e = t.error || req.error;
      reject(new Error(e && e.name === "QuotaExceededError" ? "this browser's storage for the site is full: download the notebook instead" : String(e && e.message)));
    };
  });
}

async function getJSON(url) {
  const r = await fetch(url, { cache: "no-cache" });
  if (r.status === 404) throw new Error(`NotFound: ${url}`);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.json();
}

export class StaticBackend {
  constructor(base) {
    this.base = base; // the site's root URL
    this.kind = "static";
    this.info = { limits: { max_message_bytes: 64 << 20 } };
  }

  connect() {}
  status() {}
  resetSession() {}

  lessons() {
    return getJSON(this.base + "lessons/index.json");
  }

  openLesson(id) {
    if (!/^[A-Za-z0-9_.-]+$/.test(id)) return Promise.reject(new Error(`NotFound: no lesson ${id}`));
    return getJSON(this.base + `lessons/${id}.json`);
  }

  async notebooks() {
    const all = await tx("readonly", (s) => s.getAll());
    const list = (all || [])
      .map((r) => ({ path: r.path, title: r.notebook.title || r.path, modified: r.modified, size: r.size }))
      .sort((a, b) => a.path.localeCompare(b.path));
    return { notebooks: list };
  }

  async openNotebook(path) {
    const r = await tx("readonly", (s) => s.get(path));
    if (!r) throw new Error(`NotFound: ${path} is not saved in this browser`);
    return { notebook: { ...r.notebook, path } };
  }

  async saveNotebook(path, notebook) {
    if (!path || path.length > 255 || path.startsWith("/") || path.split("/").includes("..")) throw new Error(`bad path ${path}`);
    const size = JSON.stringify(notebook).length;
    await tx("readwrite", (s) => s.put({ path, notebook: { ...notebook, path }, modified: new Date().toISOString(), size }));
    return { path };
  }
}
