// ServerKernel speaks cachebook-kernel/1 (docs/protocol.md) over one
// websocket: it reconnects with ?since= so outputs survive a dropped
// connection, routes outputs to cells by parent_header.msg_id and turns
// them into the UI's cell events:
//
//	{kind:"queued", position} {kind:"start"} {kind:"progress", done, total}
//	{kind:"counters", data} {kind:"stream", name, text}
//	{kind:"result", bundle} {kind:"measurement", data, text}
//	{kind:"error", ename, evalue, traceback, position} {kind:"done", status, timings}

const VERSION = "cachebook-kernel/1";

function uuid() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
}

export class ServerKernel {
  constructor(onStatus) {
    this.onStatus = onStatus;
    this.kind = "server";
    this.clientId = uuid();
    this.session = sessionStorage.getItem("cachebook.session") || uuid();
    sessionStorage.setItem("cachebook.session", this.session);
    this.since = Number(sessionStorage.getItem("cachebook.since." + this.session) || 0);
    this.cells = new Map(); // execute msg_id -> onEvent
    this.requests = new Map(); // msg_id -> {resolve, reject}
    this.queue = []; // frames to send once connected
    this.connection = "connecting";
    this.state = "unknown";
    this.retry = 0;
    this.info = null;
  }

  status(detail) {
    this.onStatus({ connection: this.connection, kernel: this.state, detail, kind: "server" });
  }

  connect() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const q = new URLSearchParams({ session: this.session, since: String(this.since) });
    const token = new URLSearchParams(location.search).get("token");
    if (token) q.set("token", token);
    const ws = new WebSocket(`${proto}//${location.host}/api/kernel?${q}`);
    this.ws = ws;
    this.connection = "connecting";
    this.status();
    ws.onopen = () => {
      this.retry = 0;
      this.connection = "connected";
      this.status();
      for (const f of this.queue.splice(0)) ws.send(f);
      this.request("kernel_info_request", {}, "shell").then(
        (r) => (this.info = r),
        () => {},
      );
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
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.connection = "disconnected";
      this.status("reconnecting…");
      const delay = Math.min(10000, 250 * 2 ** this.retry++);
      setTimeout(() => this.connect(), delay);
    };
  }

  send(channel, msgType, content) {
    const header = { msg_id: uuid(), session: this.clientId, msg_type: msgType, version: VERSION, date: new Date().toISOString() };
    const frame = JSON.stringify({ channel, header, parent_header: {}, metadata: {}, content });
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(frame);
    else this.queue.push(frame);
    return header.msg_id;
  }

  request(msgType, content, channel = "shell") {
    return new Promise((resolve, reject) => {
      const id = this.send(channel, msgType, content);
      this.requests.set(id, { resolve, reject });
    });
  }

  handle(m) {
    if (typeof m.seq === "number") {
      if (m.seq <= this.since) return;
      this.since = m.seq;
      sessionStorage.setItem("cachebook.since." + this.session, String(m.seq));
    }
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
      if (cell && c.execution_state === "queued") cell({ kind: "queued", position: c.queue_position });
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
        cell({ kind: "done", status: c.status, timings: c.timings, where: "server" });
        break;
    }
  }

  // execute sends a cell; onEvent receives its events until "done".
  execute(cellId, code, onEvent, kind = "sql", attrs = {}) {
    return new Promise((resolve) => {
      const wrapped = (e) => {
        onEvent(e);
        if (e.kind === "done") resolve(e);
      };
      const header = { msg_id: uuid(), session: this.clientId, msg_type: "execute_request", version: VERSION, date: new Date().toISOString() };
      this.cells.set(header.msg_id, wrapped);
      const frame = JSON.stringify({
        channel: "shell",
        header,
        parent_header: {},
        metadata: {},
        content: { code, kind, attrs, cell_id: cellId, silent: false, store_history: true },
      });
      if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(frame);
      else this.queue.push(frame);
    });
  }

  interrupt() {
    return this.request("interrupt_request", {}, "control");
  }

  restart() {
    return this.request("shutdown_request", { restart: true }, "control");
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
