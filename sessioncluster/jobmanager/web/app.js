// The sessioncluster dashboard: reads Flink's REST API (relative URLs, so it works under any
// prefix) and re-renders the current page every second. Text goes in with textContent only.
"use strict";

const POLL_MS = 1000;
const TERMINAL = new Set(["FINISHED", "CANCELED", "FAILED"]);
// the job widget's palette (sessioncluster/jupyter/dag.py)
const STATE_COLORS = {
  CREATED: "#b8b8b8", SCHEDULED: "#a9c7e3", DEPLOYING: "#7fb0dc", INITIALIZING: "#5d9ad3",
  RUNNING: "#2b7bcb", FINISHED: "#2e9d4f", CANCELING: "#f0ad4e", CANCELLING: "#f0ad4e",
  CANCELED: "#8f8f8f", FAILING: "#e07a5f", FAILED: "#d9534f", RESTARTING: "#f0ad4e",
};
const LIGHT_FILLS = new Set(["CREATED", "SCHEDULED", "DEPLOYING", "CANCELING", "CANCELLING",
  "RESTARTING"]);
const SVG_NS = "http://www.w3.org/2000/svg";
// a streaming SELECT's changes read (all the JobManager keeps), and the newest of them shown
const SQL_ROWS_KEPT = 1000;
const SQL_CHANGES_SHOWN = 100;

class AuthError extends Error {}

// -- talking to the API ----------------------------------------------------------------------

function cookie(name) {
  const hit = document.cookie.split("; ").find((c) => c.startsWith(name + "="));
  return hit ? decodeURIComponent(hit.slice(name.length + 1)) : null;
}

async function api(path, method = "GET") {
  const headers = { Accept: "application/json" };
  if (method !== "GET") {
    headers["X-Sessioncluster-Request"] = "1"; // the cookie alone may not change anything
    const xsrf = cookie("_xsrf"); // served through Jupyter's proxy: Jupyter wants its XSRF token
    if (xsrf) headers["X-XSRFToken"] = xsrf;
  }
  const resp = await fetch(path, { method, headers, credentials: "same-origin", cache: "no-store" });
  if (resp.status === 401) throw new AuthError();
  const body = resp.headers.get("Content-Type")?.includes("json") ? await resp.json() : await resp.text();
  return { status: resp.status, body };
}

async function get(path) {
  const { status, body } = await api(path);
  if (status !== 200) throw new Error(`${path}: ${status} ${(body.errors || []).join("; ")}`);
  return body;
}

// -- building DOM ------------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "onclick") node.addEventListener("click", v);
    else if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const c of children) node.append(c instanceof Node ? c : String(c));
  return node;
}

function stateBadge(state) {
  const fill = STATE_COLORS[state] || "#b8b8b8";
  const badge = el("span", { class: "state", "data-state": state }, state);
  badge.style.background = fill;
  if (LIGHT_FILLS.has(state)) badge.style.color = "#1f1f1f";
  return badge;
}

function table(headers, rows, numeric = []) {
  return el("table", {},
    el("thead", {}, el("tr", {}, headers.map((h, i) => el("th", { class: numeric.includes(i) ? "num" : null }, h)))),
    el("tbody", {}, rows.map((row) => {
      const cells = row.cells || row;
      const tr = el("tr", { class: row.href ? "link" : null },
        cells.map((c, i) => el("td", { class: numeric.includes(i) ? "num" : null }, c)));
      if (row.href) tr.addEventListener("click", () => { location.hash = row.href; });
      return tr;
    })));
}

function card(label, value) {
  return el("div", { class: "card" }, el("div", { class: "value" }, value), el("div", { class: "label" }, label));
}

function duration(ms) {
  if (ms === undefined || ms < 0) return "";
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${Math.round(s % 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

function when(ms) {
  return ms > 0 ? new Date(ms).toLocaleTimeString() : "";
}

// -- pages -----------------------------------------------------------------------------------

function jobRows(jobs) {
  return jobs.map((j) => ({
    href: `#/jobs/${j.jid}`,
    cells: [j.name, stateBadge(j.state), when(j["start-time"]), duration(j.duration),
      `${j.tasks.finished || 0} / ${j.tasks.total}`, el("code", {}, j.jid)],
  }));
}

function jobTables(jobs) {
  const running = jobs.filter((j) => !TERMINAL.has(j.state));
  const done = jobs.filter((j) => TERMINAL.has(j.state)).sort((a, b) => b["end-time"] - a["end-time"]);
  const headers = ["name", "state", "started", "duration", "tasks finished", "job id"];
  return [
    el("h2", {}, `Running jobs (${running.length})`),
    running.length ? table(headers, jobRows(running), [3, 4]) : el("p", { class: "muted" }, "none"),
    el("h2", {}, `Completed jobs (${done.length})`),
    done.length ? table(headers, jobRows(done), [3, 4]) : el("p", { class: "muted" }, "none"),
  ];
}

async function overviewPage() {
  const [ov, jobs] = await Promise.all([get("overview"), get("jobs/overview")]);
  return [
    el("h1", {}, "Overview"),
    el("div", { class: "cards", id: "overview-cards" },
      card("TaskManagers", ov.taskmanagers),
      card("slots available / total", `${ov["slots-available"]} / ${ov["slots-total"]}`),
      card("jobs running", ov["jobs-running"]), card("finished", ov["jobs-finished"]),
      card("cancelled", ov["jobs-cancelled"]), card("failed", ov["jobs-failed"])),
    ...jobTables(jobs.jobs),
  ];
}

async function jobsPage() {
  const jobs = await get("jobs/overview");
  return [el("h1", {}, "Jobs"), ...jobTables(jobs.jobs)];
}

function tmRows(tms) {
  return tms.map((tm) => ({
    href: `#/taskmanagers/${encodeURIComponent(tm.id)}`,
    cells: [tm.id, tm.path.split("/")[2] || "", stateBadgeForTm(tm.state),
      `${tm.slotsNumber - tm.freeSlots} / ${tm.slotsNumber}`,
      tm.timeSinceLastHeartbeat > 0 ? `${((Date.now() - tm.timeSinceLastHeartbeat) / 1000).toFixed(1)} s ago` : "",
      `${tm.libraryCache.entries} (${tm.libraryCache.hits} hits, ${tm.libraryCache.misses} misses)`],
  }));
}

function stateBadgeForTm(state) {
  const badge = stateBadge(state);
  badge.style.background = state === "LOST" ? STATE_COLORS.FAILED : STATE_COLORS.FINISHED;
  badge.style.color = "#ffffff";
  return badge;
}

async function taskmanagersPage() {
  const { taskmanagers } = await get("taskmanagers");
  return [
    el("h1", {}, "TaskManagers"),
    taskmanagers.length
      ? table(["id", "host", "state", "slots used / total", "last heartbeat", "library cache"], tmRows(taskmanagers))
      : el("p", { class: "muted" }, "no TaskManager has registered"),
  ];
}

async function taskmanagerPage(tmId) {
  const tm = await get(`taskmanagers/${encodeURIComponent(tmId)}`);
  const logResp = await api(`taskmanagers/${encodeURIComponent(tmId)}/log`);
  const log = logResp.status === 200 ? String(logResp.body) : (logResp.body.errors || []).join("; ");
  return [
    el("h1", {}, `TaskManager ${tm.id}`),
    table(["id", "host", "state", "slots used / total", "last heartbeat", "library cache"], tmRows([tm]).map((r) => r.cells)),
    el("h2", {}, "Log (the end)"),
    el("pre", { id: "tm-log" }, log.split("\n").slice(-400).join("\n")),
  ];
}

// -- the job page ----------------------------------------------------------------------------

// sqlResult: false once the job answered that it has no SQL result (it is no streaming SELECT)
const jobState = { jid: null, selected: null, final: null, sqlResult: true };

/** Vertices placed in columns by their longest path from a source, rows in input order. */
function layout(nodes) {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const depth = new Map();
  const depthOf = (n) => {
    if (depth.has(n.id)) return depth.get(n.id);
    depth.set(n.id, 0); // guards a cycle, which a JobGraph never has
    const d = Math.max(-1, ...(n.inputs || []).map((i) => (byId.has(i.id) ? depthOf(byId.get(i.id)) : -1))) + 1;
    depth.set(n.id, d);
    return d;
  };
  nodes.forEach(depthOf);
  const rows = new Map();
  const place = new Map();
  for (const n of nodes) {
    const col = depth.get(n.id);
    const row = rows.get(col) || 0;
    rows.set(col, row + 1);
    place.set(n.id, { col, row });
  }
  return place;
}

function graphSvg(plan, vertices, onSelect, selected) {
  const W = 210, H = 62, DX = 270, DY = 86, PAD = 16;
  const place = layout(plan.nodes);
  const byId = new Map(vertices.map((v) => [v.id, v]));
  const cols = Math.max(0, ...[...place.values()].map((p) => p.col)) + 1;
  const rows = Math.max(0, ...[...place.values()].map((p) => p.row)) + 1;
  const root = svg("svg", { width: PAD * 2 + (cols - 1) * DX + W, height: PAD * 2 + (rows - 1) * DY + H, id: "jobgraph" });
  root.append(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5",
    markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" }, svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#888" }))));
  const xy = (id) => { const p = place.get(id); return [PAD + p.col * DX, PAD + p.row * DY]; };
  for (const n of plan.nodes) {
    for (const input of n.inputs || []) {
      if (!place.has(input.id)) continue;
      const [x1, y1] = xy(input.id), [x2, y2] = xy(n.id);
      const a = [x1 + W, y1 + H / 2], b = [x2, y2 + H / 2], mid = (a[0] + b[0]) / 2;
      root.append(svg("path", { d: `M ${a[0]} ${a[1]} C ${mid} ${a[1]}, ${mid} ${b[1]}, ${b[0]} ${b[1]}`,
        fill: "none", stroke: "#888", "stroke-width": "1.4", "marker-end": "url(#arrow)", class: "edge" }));
      root.append(svg("text", { x: mid, y: (a[1] + b[1]) / 2 - 4, "text-anchor": "middle", fill: "#666" }, input.ship_strategy));
    }
  }
  for (const n of plan.nodes) {
    const v = byId.get(n.id) || { status: "CREATED", name: n.description, parallelism: n.parallelism, metrics: {} };
    const [x, y] = xy(n.id);
    const fill = STATE_COLORS[v.status] || "#b8b8b8";
    const ink = LIGHT_FILLS.has(v.status) ? "#1f1f1f" : "#ffffff";
    const name = v.name.length > 30 ? v.name.slice(0, 29) + "…" : v.name;
    const g = svg("g", { class: "vertex", "data-vertex": n.id, "data-state": v.status, cursor: "pointer" },
      svg("title", {}, `${v.name}\n${v.status}`),
      svg("rect", { x, y, width: W, height: H, rx: 6, fill, stroke: n.id === selected ? "#1f1f1f" : fill, "stroke-width": 2 }),
      svg("text", { x: x + 10, y: y + 20, fill: ink, "font-weight": "600" }, name),
      svg("text", { x: x + 10, y: y + 38, fill: ink }, `${v.status} · parallelism ${v.parallelism}`),
      svg("text", { x: x + 10, y: y + 54, fill: ink }, `in ${v.metrics["read-records"] ?? 0} · out ${v.metrics["write-records"] ?? 0}`));
    g.addEventListener("click", () => onSelect(n.id));
    root.append(g);
  }
  return el("div", { class: "graph" }, root);
}

async function cancelJob(jid, button) {
  button.disabled = true;
  const { status, body } = await api(`jobs/${jid}?mode=cancel`, "PATCH");
  if (status !== 202) {
    alert(`cancel: ${(body.errors || [String(status)]).join("; ")}`);
    button.disabled = false;
  }
}

async function jobPage(jid) {
  if (jobState.jid !== jid) Object.assign(jobState, { jid, selected: null, final: null, sqlResult: true });
  if (jobState.final) return null; // a finished job's page does not change any more
  const job = await get(`jobs/${jid}`);
  const streaming = job["job-type"] === "STREAMING";
  const [accs, exceptions, checkpoints, subtasks, sqlResult] = await Promise.all([
    get(`jobs/${jid}/accumulators`),
    get(`jobs/${jid}/exceptions`),
    streaming ? api(`jobs/${jid}/checkpoints`) : null,
    Promise.all(job.vertices.map((v) => get(`jobs/${jid}/vertices/${encodeURIComponent(v.id)}`))),
    streaming && jobState.sqlResult ? api(`jobs/${jid}/sql-result?limit=${SQL_ROWS_KEPT}`) : null,
  ]);
  if (sqlResult && sqlResult.status === 404) jobState.sqlResult = false;
  const terminal = TERMINAL.has(job.state);
  const cancel = el("button", { id: "cancel", disabled: terminal }, "Cancel job");
  cancel.addEventListener("click", () => cancelJob(jid, cancel));
  const select = (id) => { Object.assign(jobState, { selected: id, final: null }); refresh(true); };
  const page = [
    el("div", { class: "jobhead" }, el("h1", {}, job.name), stateBadge(job.state), cancel),
    el("div", { class: "jobhead meta" }, `job ${jid} · ${job["job-type"]} · started ${when(job["start-time"])} · `
      + `duration ${duration(job.duration)}`),
    el("div", { class: "beside" },
      el("div", {}, el("h2", {}, "JobGraph"), graphSvg(job.plan, job.vertices, select, jobState.selected)),
      sqlResult && sqlResult.status === 200 ? sqlResultSection(sqlResult.body) : null),
    el("h2", {}, "Vertices"),
    table(["vertex", "state", "parallelism", "records in", "records out", "duration", "subtasks"],
      job.vertices.map((v) => ({
        cells: [v.name, stateBadge(v.status), v.parallelism, v.metrics["read-records"], v.metrics["write-records"],
          duration(v.duration), Object.entries(v.tasks).filter(([, n]) => n > 0).map(([s, n]) => `${n} ${s}`).join(", ")],
      })), [2, 3, 4, 5]),
    el("h2", {}, "Subtasks"),
    table(["vertex", "subtask", "attempt", "state", "TaskManager", "host", "slot", "records in", "records out", "duration"],
      subtasks.flatMap((v) => v.subtasks
        .filter(() => !jobState.selected || v.id === jobState.selected)
        .map((s) => [v.name, s.subtask, `#${s.attempt}`, stateBadge(s.status), s["taskmanager-id"], s.host,
          s.slot ?? "", s.metrics["read-records"], s.metrics["write-records"], duration(s.duration)])),
      [1, 7, 8, 9]),
  ];
  if (jobState.selected) {
    page.push(el("p", { class: "muted" }, "Showing one vertex's subtasks. ",
      el("a", { href: "javascript:void 0", onclick: () => select(null) }, "Show all")));
  }
  const userAccs = accs["user-task-accumulators"];
  page.push(el("h2", {}, "Accumulators"), userAccs.length
    ? table(["name", "type", "value"], userAccs.map((a) => [a.name, a.type, a.value]))
    : el("p", { class: "muted" }, "none"));
  if (checkpoints && checkpoints.status === 200) page.push(...checkpointSection(checkpoints.body));
  page.push(el("h2", {}, "Exceptions"), exceptions["root-exception"]
    ? el("pre", { class: "error", id: "exception" }, exceptions["root-exception"])
    : el("p", { class: "muted" }, "none"));
  if (terminal) jobState.final = page;
  return page;
}

/** The rows a changelog leaves: +I/+U add a row, -U/-D take one equal row away. */
function materialize(rows) {
  const out = [];
  for (const r of rows) {
    const key = JSON.stringify(r.fields);
    if (r.kind === "+I" || r.kind === "+U") out.push(r.fields);
    else {
      const i = out.findIndex((f) => JSON.stringify(f) === key);
      if (i >= 0) out.splice(i, 1);
    }
  }
  return out;
}

function fieldText(v) {
  return v === null ? "null" : typeof v === "object" ? JSON.stringify(v) : String(v);
}

/** A streaming SELECT's result: its table (when every change is at hand) and newest changes. */
function sqlResultSection(result) {
  const names = result.columns.map((c) => c.name);
  const numeric = result.columns.map((c, i) => (/INT|DECIMAL|DOUBLE|FLOAT|REAL|NUMERIC/.test(c.type) ? i : -1));
  const complete = result.total === result.rows.length;
  const newest = result.rows.slice(-SQL_CHANGES_SHOWN);
  const changes = table(["op", ...names], newest.map((r) => [r.kind, ...r.fields.map(fieldText)]),
    numeric.filter((i) => i >= 0).map((i) => i + 1));
  changes.id = "sql-changelog";
  changes.querySelectorAll("tbody tr").forEach((tr, i) => tr.setAttribute("data-kind", newest[i].kind));
  const section = el("div", { class: "sqlresult", id: "sql-result", "data-total": result.total },
    el("h2", {}, "Result"));
  if (complete) {
    const rows = materialize(result.rows);
    const now = table(names, rows.map((f) => f.map(fieldText)), numeric.filter((i) => i >= 0));
    now.id = "sql-table";
    section.append(el("p", { class: "muted", id: "sql-summary" }, `${rows.length} rows, from ${result.total} changes`), now);
  } else {
    section.append(el("p", { class: "muted", id: "sql-summary" },
      `the query has made ${result.total} changes; the newest ${result.rows.length} are kept here, too few to show its table`));
  }
  section.append(el("h2", {}, `Changelog (the newest ${newest.length} of ${result.total})`),
    newest.length ? changes : el("p", { class: "muted" }, "no row yet"));
  return section;
}

async function tablesPage() {
  const [{ tables }, { sessions }] = await Promise.all([get("sql/tables"), get("sql/gateway")]);
  return [
    el("h1", {}, "Tables"),
    el("p", { class: "muted" }, "The session's Flink SQL catalog: what CREATE TABLE, CREATE VIEW and CREATE FUNCTION made, in any client of the session."),
    tables.length
      ? Object.assign(table(["name", "kind"], tables.map((t) => ({ cells: [t.name, t.kind] }))), { id: "sql-tables" })
      : el("p", { class: "muted" }, "the catalog is empty"),
    ...gatewaySection(sessions),
  ];
}

/** The SQL Gateway endpoint's clients: each open session and the statements it ran. */
function gatewaySection(sessions) {
  const rows = sessions.flatMap((s) => s.operations.map((op) => ({
    href: op.jobID ? `#/jobs/${op.jobID}` : null,
    cells: [s.sessionName, el("code", {}, op.statement), op.status, op.jobID ? el("code", {}, op.jobID) : ""],
  })));
  const idle = sessions.filter((s) => !s.operations.length).map((s) => s.sessionName);
  return [
    el("h2", {}, `SQL Gateway sessions (${sessions.length})`),
    el("p", { class: "muted" }, "Clients of Flink's SQL Gateway REST API on this session (sessioncluster sql-client, or any HTTP client): their statements, each operation's status and its job."),
    rows.length
      ? Object.assign(table(["session", "statement", "status", "job"], rows), { id: "sql-gateway" })
      : el("p", { class: "muted", id: "sql-gateway-none" }, sessions.length ? "no statement yet" : "none"),
    idle.length && rows.length ? el("p", { class: "muted" }, `no statement yet: ${idle.join(", ")}`) : "",
  ];
}

function checkpointSection(stats) {
  const c = stats.counts;
  const rows = stats.history.slice(0, 10).map((h) => [h.id, stateBadge(h.status === "COMPLETED" ? "FINISHED" : "FAILED"),
    when(h.trigger_timestamp), duration(h.end_to_end_duration), h.state_size, h.processed_data]);
  const restored = stats.latest.restored;
  return [
    el("h2", {}, "Checkpoints"),
    el("div", { class: "cards" }, card("completed", c.completed), card("failed", c.failed),
      card("restored", restored ? `from ${restored.external_path}` : "no")),
    rows.length ? table(["id", "status", "triggered", "duration", "state size", "records"], rows, [0, 3, 4, 5])
      : el("p", { class: "muted" }, "no checkpoint yet"),
  ];
}

// -- routing and the poll loop ----------------------------------------------------------------

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "jobs" && parts[1]) return { nav: "jobs", render: () => jobPage(parts[1]) };
  if (parts[0] === "jobs") return { nav: "jobs", render: jobsPage };
  if (parts[0] === "taskmanagers" && parts[1]) return { nav: "taskmanagers", render: () => taskmanagerPage(parts[1]), once: true };
  if (parts[0] === "taskmanagers") return { nav: "taskmanagers", render: taskmanagersPage };
  if (parts[0] === "tables") return { nav: "tables", render: tablesPage };
  return { nav: "overview", render: overviewPage };
}

let busy = false;
let shownHash = null;

async function refresh(force = false) {
  if (busy) return;
  const r = route();
  if (r.once && shownHash === location.hash && !force) return;
  busy = true;
  const target = document.getElementById("page");
  try {
    const content = await r.render();
    if (content) {
      target.replaceChildren(...content);
      shownHash = location.hash;
    }
    document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (err) {
    if (err instanceof AuthError) {
      target.replaceChildren(el("div", { class: "notice", id: "unauthorized" },
        "Not signed in: open the link that ", el("code", {}, "sessioncluster dashboard NAME"),
        " prints (it carries the session's token)."));
    } else {
      target.replaceChildren(el("div", { class: "notice" }, `Cannot reach the JobManager: ${err.message}`));
    }
  } finally {
    busy = false;
  }
  document.querySelectorAll("header nav a").forEach((a) => a.classList.toggle("active", a.dataset.page === r.nav));
}

async function start() {
  try {
    const config = await get("config");
    document.getElementById("session-name").textContent = config["flink-revision"].replace(/^sessioncluster /, "");
  } catch (err) { /* refresh() says what is wrong */ }
  window.addEventListener("hashchange", () => refresh(true));
  await refresh(true);
  setInterval(refresh, POLL_MS);
}

start();
