// The UI's kernels speak cachebook-kernel/1 (docs/protocol.md). KernelClient
// is the protocol client both share: it routes outputs to cells by
// parent_header.msg_id and turns them into the UI's cell events:
//
//	{kind:"queued", position} {kind:"start"} {kind:"progress", done, total, unit}
//	{kind:"counters", data} {kind:"stream", name, text}
//	{kind:"result", bundle} {kind:"measurement", data, text}
//	{kind:"error", ename, evalue, traceback, position} {kind:"done", status, timings, where}
//
// The two kernels differ only in transport: ServerKernel sends frames over
// one websocket to `cachebook serve` (and reconnects with ?since= so
// outputs survive a dropped connection); WasmKernel (wasm-kernel.js) posts
// them to the same kernel compiled to WebAssembly in a Web Worker.

const VERSION = "cachebook-kernel/1";

export function uuid() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
}

// The cell kinds the last kernel_info_reply listed ({name, summary,
// runtimes, params, note}); the UI has no list of its own.
let knownKinds = [];

// cellKinds returns the names of the cell kinds the kernels reported.
export function cellKinds() {
  return knownKinds.length ? knownKinds.map((k) => k.name) : ["sql"];
}

// kindInfo returns what the kernels said about kind, if anything.
export function kindInfo(kind) {
  return knownKinds.find((k) => k.name === kind);
}

export class KernelClient {
  // kind: "server" or "wasm"; where: what "done" events say ran the cell.
  constructor(onStatus, kind) {
    this.onStatus = onStatus;
    this.kind = kind;
    this.where = kind;
    this.clientId = uuid();
    this.cells = new Map(); // execute msg_id -> onEvent
    this.requests = new Map(); // msg_id -> {resolve, reject}
    this.connection = "connecting";
    this.state = "unknown";
    this.info = null;
  }

  status(detail) {
    this.onStatus({ connection: this.connection, kernel: this.state, detail, kind: this.kind });
  }

  // transmit sends one encoded frame (defined by each transport).
  transmit(frame) {
    throw new Error(`transmit not implemented (${frame.length} bytes)`);
  }

  frame(channel, msgType, content) {
    const header = { msg_id: uuid(), session: this.clientId, msg_type: msgType, version: VERSION, date: new Date().toISOString() };
    return { id: header.msg_id, frame: JSON.stringify({ channel, header, parent_header: {}, metadata: {}, content }) };
  }

  send(channel, msgType, content) {
    const f = this.frame(channel, msgType, content);
    this.transmit(f.frame);
    return f.id;
  }

  request(msgType, content, channel = "shell") {
    return new Promise((resolve, reject) => {
      const f = this.frame(channel, msgType, content);
      this.requests.set(f.id, { resolve, reject });
      this.transmit(f.frame);
    });
  }

  // kernelInfo asks for kernel_info and remembers the cell kinds.
  kernelInfo() {
    return this.request("kernel_info_request", {}, "shell").then((r) => {
      this.info = { ...(this.info || {}), ...r };
      if (Array.isArray(r.kinds)) knownKinds = r.kinds;
      return r;
    });
  }

  // handle maps one kernel message to cell events.
  handle(m) {
    const type = m.header && m.header.msg_type;
    const c = m.content || {};
    const parent = (m.parent_header && m.parent_header.msg_id) || "";
    if (type === "welcome") {
      this.state = c.execution_state || "idle";
      this.status(c.missed ? "some output was lost while disconnected" : "");
      return;
    }
    if (type === "status") {
      this.state = c.execution_state;
      this.status();
      const cell = this.cells.get(parent);
      if (cell && c.execution_state === "queued") cell({ kind: "queued", position: c.queue_position, shared: c.shared, wait_ns: c.expected_wait_ns });
      return;
    }
    const req = this.requests.get(parent);
    if (req && type && type.endsWith("_reply") && type !== "execute_reply") {
      this.requests.delete(parent);
      if (c.status === "error") req.reject(new Error(`${c.ename || "error"}: ${c.evalue || ""}`));
      else req.resolve(c);
      return;
    }
    if (type === "protocol_error") {
      if (req) {
        this.requests.delete(parent);
        req.reject(new Error(c.evalue));
      }
      const cell = this.cells.get(parent);
      if (cell) {
        this.cells.delete(parent);
        cell({ kind: "error", ename: c.ename, evalue: c.evalue });
        cell({ kind: "done", status: "error", where: this.where });
      }
      console.warn("protocol_error", c);
      return;
    }
    const cell = this.cells.get(parent);
    if (!cell) return;
    switch (type) {
      case "execute_input":
        cell({ kind: "start", execution_count: c.execution_count });
        break;
      case "stream":
        cell({ kind: "stream", name: c.name, text: c.text });
        break;
      case "display_data":
      case "update_display_data": {
        const d = c.data || {};
        if (d["application/vnd.cachebook.progress+json"]) cell({ kind: "progress", ...d["application/vnd.cachebook.progress+json"] });
        else if (d["application/vnd.cachebook.counters+json"]) cell({ kind: "counters", data: d["application/vnd.cachebook.counters+json"], live: true });
        else if (d["application/vnd.cachebook.measurement+json"]) cell({ kind: "measurement", data: d["application/vnd.cachebook.measurement+json"], live: true });
        else if (d["application/vnd.cachebook.prediction+json"]) cell({ kind: "prediction", data: d["application/vnd.cachebook.prediction+json"], text: d["text/plain"] });
        else if (d["text/plain"]) cell({ kind: "stream", name: "stdout", text: d["text/plain"] + "\n" });
        break;
      }
      case "execute_result": {
        const d = c.data || {};
        if (d["application/vnd.cachebook.result+json"]) cell({ kind: "result", bundle: d["application/vnd.cachebook.result+json"], model: d["application/vnd.cachebook.model+json"] });
        else if (d["application/vnd.cachebook.measurement+json"]) cell({ kind: "measurement", data: d["application/vnd.cachebook.measurement+json"], text: d["text/plain"] });
        else cell({ kind: "stream", name: "stdout", text: d["text/plain"] || "" });
        break;
      }
      case "error":
        cell({ kind: "error", ename: c.ename, evalue: c.evalue, traceback: c.traceback, position: c.position, statement_index: c.statement_index });
        break;
      case "execute_reply":
        this.cells.delete(parent);
        cell({ kind: "done", status: c.status, timings: c.timings, where: this.where, evalue: c.evalue });
        break;
    }
  }

  // execute sends a cell; onEvent receives its events until "done".
  // extra: further request members (predict, guess: docs/protocol.md §3.14).
  execute(cellId, code, onEvent, kind = "sql", attrs = {}, extra = {}) {
    return new Promise((resolve) => {
      const wrapped = (e) => {
        onEvent(e);
        if (e.kind === "done") resolve(e);
      };
      // A tab whose token the server refuses fails the cell at once with
      // what the banner says, rather than queueing it for a connection
      // that will not come.
      if (this.refused) {
        wrapped({ kind: "error", ename: "Unauthorized", evalue: this.refused });
        wrapped({ kind: "done", status: "error", where: this.where });
        return;
      }
      const f = this.frame("shell", "execute_request", { code, kind, attrs, cell_id: cellId, silent: false, store_history: true, ...extra });
      this.cells.set(f.id, wrapped);
      this.transmit(f.frame);
    });
  }

  // fail ends every running cell with an error (the transport is gone).
  fail(ename, evalue) {
    for (const cell of this.cells.values()) {
      cell({ kind: "error", ename, evalue });
      cell({ kind: "done", status: "error", where: this.where });
    }
    this.cells.clear();
    for (const r of this.requests.values()) r.reject(new Error(evalue));
    this.requests.clear();
  }

  interrupt() {
    return this.request("interrupt_request", {}, "control");
  }

  // resetSession puts the kernel session's engine settings back to their
  // defaults (a silent RESET ALL), so that a notebook opened in this tab
  // starts from defaults whatever the one before it SET.
  resetSession() {
    return this.execute("", "RESET ALL", () => {}, "sql", {}, { silent: true, store_history: false });
  }

  restart() {
    return this.request("shutdown_request", { restart: true }, "control");
  }
}

// CLOSE_TOO_MANY_SESSIONS is the close code of a learner's tab over the
// class's session limit (web.CloseTooManySessions); the reason says so.
const CLOSE_TOO_MANY_SESSIONS = 4429;

export class ServerKernel extends KernelClient {
  constructor(onStatus) {
    super(onStatus, "server");
    this.session = sessionStorage.getItem("cachebook.session") || uuid();
    sessionStorage.setItem("cachebook.session", this.session);
    this.since = Number(sessionStorage.getItem("cachebook.since." + this.session) || 0);
    this.queue = []; // frames to send once connected
    this.retry = 0;
  }

  connect() {
    if (this.stopped) return;
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const q = new URLSearchParams({ session: this.session, since: String(this.since) });
    const token = new URLSearchParams(location.search).get("token");
    if (token) q.set("token", token);
    const ws = new WebSocket(`${proto}//${location.host}/api/kernel?${q}`);
    this.ws = ws;
    this.connection = "connecting";
    this.status();
    ws.onopen = () => {
      ws.opened = true;
      this.refused = "";
      this.retry = 0;
      this.connection = "connected";
      this.status();
      for (const f of this.queue.splice(0)) ws.send(f);
      this.kernelInfo().catch(() => {});
    };
    ws.onmessage = (ev) => {
      let m;
      try {
        m = JSON.parse(ev.data);
      } catch {
        return;
      }
      this.handle(m);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws || this.stopped) return;
      if (ev.code === CLOSE_TOO_MANY_SESSIONS) {
        // A learner over the class's tab limit: say so, and try again
        // now and then (a tab closed elsewhere frees a slot).
        this.connection = "too many tabs";
        this.status(ev.reason || "You have too many tabs open on this class: close one of them.");
        setTimeout(() => this.connect(), 5000);
        return;
      }
      // Cells sent before the drop are lost if the server restarted.
      if (ws.opened) {
        this.inflight = [...this.cells.keys()];
        // Replies to requests sent on it (save, open, lists) do not
        // survive the drop; requests queued while disconnected wait.
        for (const r of this.requests.values()) r.reject(new Error("the connection to the server dropped; try again"));
        this.requests.clear();
      }
      this.connection = "disconnected";
      this.status("reconnecting…");
      const delay = Math.min(10000, 250 * 2 ** this.retry++);
      if (!ws.opened) this.checkToken();
      setTimeout(() => this.connect(), delay);
    };
  }

  transmit(frame) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(frame);
    else this.queue.push(frame);
  }

  handle(m) {
    if (m.header && m.header.msg_type === "welcome") this.welcome(m.content || {});
    if (typeof m.seq === "number") {
      if (m.seq <= this.since) return;
      this.since = m.seq;
      sessionStorage.setItem("cachebook.since." + this.session, String(m.seq));
    }
    super.handle(m);
  }

  // welcome resets the replay cursor to what the server will replay (a
  // restarted server counts from 1 again, so what it sends now is new even
  // below the old cursor) and, when server_instance changed, ends the
  // cells the old server was running.
  welcome(c) {
    if (typeof c.replay_from === "number" && c.replay_from - 1 < this.since) {
      this.since = c.replay_from - 1;
      sessionStorage.setItem("cachebook.since." + this.session, String(this.since));
    }
    const restarted = this.instance && c.server_instance && c.server_instance !== this.instance;
    this.instance = c.server_instance || this.instance;
    if (restarted) {
      this.lose(this.inflight || [], "lost: the server restarted");
      this.onStatus({ connection: "connected", kernel: c.execution_state || "idle", detail: "the server restarted", kind: this.kind });
    }
    this.inflight = null;
  }

  // lose ends the cells whose execute requests had the given ids with an
  // error saying why (the server that ran them is gone).
  lose(ids, why) {
    for (const id of ids) {
      const cell = this.cells.get(id);
      if (!cell) continue;
      this.cells.delete(id);
      cell({ kind: "error", ename: "Lost", evalue: why });
      cell({ kind: "done", status: "error", where: this.where });
    }
  }

  // checkToken asks the server, after a connection failed, whether it
  // refuses this tab's token (a restart with a new token): then the tab
  // says so, with how to get back in, and cells it had sent are lost.
  async checkToken() {
    let why = "";
    try {
      const r = await fetch("/api/status", { cache: "no-store" });
      if (r.status !== 401) return;
      why = await r.text();
    } catch {
      return; // the server is down: keep retrying
    }
    if (/removed you from the class/.test(why)) {
      // A learner the teacher removed: the class bar says so; this tab
      // stops trying to reconnect.
      this.stopped = true;
      this.refused = "The teacher removed you from the class: cells no longer run on the server.";
      this.lose(this.inflight || [], "lost: the teacher removed you from the class");
      this.inflight = null;
      this.fail("Unauthorized", this.refused);
      this.connection = "removed";
      this.status();
      return;
    }
    this.lose(this.inflight || [], "lost: the server restarted");
    this.inflight = null;
    this.connection = "token refused";
    this.refused =
      "The server no longer accepts this tab's token: it was restarted with a new one. Open the URL that `cachebook serve` printed (it ends in ?token=…); Export .ipynb still saves your work from this tab.";
    this.fail("Unauthorized", this.refused);
    this.status(this.refused);
  }

  lessons() {
    return this.request("lesson_list_request", {});
  }

  openLesson(id) {
    return this.request("lesson_open_request", { id });
  }

  notebooks() {
    return this.request("notebook_list_request", {});
  }

  openNotebook(path) {
    return this.request("notebook_open_request", { path });
  }

  saveNotebook(path, notebook) {
    return this.request("notebook_save_request", { path, notebook });
  }
}
