// minikafka console: the cluster's state arrives whole, then as JSON merge patches (server-sent events); each
// partition is drawn as the seed articles draw it: every replica's log as offset boxes, its LEO and HW, the
// leader's view of each follower (remote LEO), the ISR and the leader epochs.
"use strict";

const CELL = 26;          // px per offset
const WINDOW = 24;        // offsets drawn, ending at the largest LEO
const LABEL_W = 150;      // the replica's name, left of the boxes
const INFO_W = 250;       // its numbers, right of the boxes
const ROW_H = 64;
const TOP = 18;           // the offset numbers
const EPOCH_COLOURS = 8;
const TIMELINE_ROWS = 300;

let state = null;
let timeline = [];
const drawn = new Map();  // "topic/partition" -> {element, json}

function applyPatch(doc, patch) {
  const result = Object.assign({}, doc);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else if (isObject(value) && isObject(result[key])) result[key] = applyPatch(result[key], value);
    else result[key] = value;
  }
  return result;
}

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function esc(text) {
  return String(text).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

function clock(ms) {
  const d = new Date(ms);
  return d.toLocaleTimeString([], {hour12: false}) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

// --- the header and the brokers ------------------------------------------------------------------------------

function brokerStatus(b) {
  if (b.answering) return "up";
  return b.registered ? "not answering" : "down";
}

function renderHeader() {
  document.getElementById("source").textContent = state.source || "";
  const problem = document.getElementById("problem");
  problem.hidden = !state.problem;
  problem.textContent = state.problem || "";
  document.getElementById("updated").textContent = "last change " + clock(Date.now());
  const note = document.getElementById("timeline-note");
  note.hidden = state.timeline.available;
  note.textContent = state.timeline.available ? "" : "Timeline unavailable. " + state.timeline.note;
  document.getElementById("timeline").hidden = !state.timeline.available;
  document.getElementById("timeline-filter").hidden = !state.timeline.available;
}

function renderBrokers() {
  const html = Object.values(state.brokers).map(b => {
    const status = brokerStatus(b);
    const badge = status === "up" ? "ok" : status === "down" ? "bad" : "warn";
    return `<div class="broker" data-broker="${b.id}" data-status="${status}" data-controller="${b.controller}">
      <div><span class="name">broker ${b.id}</span> <span class="badge ${badge}">${status}</span>
      ${b.controller ? '<span class="badge ok">controller</span>' : ""}</div>
      <div class="detail">${esc(b.address)} · controller epoch seen ${b.controller_epoch}
      ${b.registered ? "· registered" : "· not registered"}</div>
      ${b.problem ? `<div class="detail">${esc(b.problem)}</div>` : ""}
    </div>`;
  });
  const epoch = state.controller_epoch >= 0 ? ` (controller epoch ${state.controller_epoch})` : "";
  document.getElementById("brokers").innerHTML = html.join("") ||
    `<p>No broker known yet${epoch}.</p>`;
}

// --- the partitions ------------------------------------------------------------------------------------------

function epochOf(epochs, offset) {
  let epoch = null;
  for (const [e, start] of epochs) if (start <= offset) epoch = e;
  return epoch;
}

function colour(epoch) {
  return `var(--epoch-${epoch === null ? 0 : ((epoch % EPOCH_COLOURS) + EPOCH_COLOURS) % EPOCH_COLOURS})`;
}

function stateBadge(p) {
  const kind = p.state === "ok" ? "ok" : p.state === "offline" ? "bad" : "warn";
  return `<span class="badge ${kind}">${esc(p.state)}</span>`;
}

function drawPartition(p) {
  const leaderFirst = p.replicas.includes(p.leader) ? [p.leader, ...p.replicas.filter(b => b !== p.leader)] : p.replicas;
  const logs = leaderFirst.map(b => p.logs[String(b)]).filter(Boolean);
  const hi = Math.max(0, ...logs.map(l => l.leo));
  const logStart = logs.length ? Math.min(...logs.map(l => l.log_start)) : 0;
  const lo = Math.max(logStart, hi - WINDOW + 1, 0);
  const x = offset => LABEL_W + (offset - lo) * CELL;
  const width = LABEL_W + (hi - lo + 1) * CELL + INFO_W;
  const height = TOP + leaderFirst.length * ROW_H;
  const parts = [];
  const step = String(hi).length > 3 ? 5 : 1;
  for (let o = lo; o <= hi; o++) {
    if (o % step === 0 || o === lo || o === hi) {
      parts.push(`<text class="muted" x="${x(o) + CELL / 2}" y="11" text-anchor="middle">${o}</text>`);
    }
  }
  if (lo > 0) parts.push(`<text class="muted" x="${LABEL_W - 6}" y="11" text-anchor="end">offset … ${lo - 1} ◂</text>`);
  leaderFirst.forEach((broker, i) => parts.push(drawReplica(p, broker, TOP + i * ROW_H, lo, hi, x)));
  const leaderLog = p.logs[String(p.leader)];
  const epochs = leaderLog ? leaderLog.epochs : [];
  const epochText = epochs.length
    ? epochs.map(([e, start]) => `epoch ${e} from offset ${start}`).join(" · ")
    : "no leader epoch cache known";
  return `<div class="head">
      <span class="tp">${esc(p.topic)}-${p.partition}</span> ${stateBadge(p)}
      <span>leader <b>${p.leader >= 0 ? p.leader : "none"}</b></span>
      <span>leader epoch <b>${p.leader_epoch}</b></span>
      <span>ISR <b>{${p.isr.join(", ")}}</b></span>
      <span>replicas [${p.replicas.join(", ")}]</span>
      ${p.min_isr >= 0 ? `<span>min.insync.replicas ${p.min_isr}</span>` : ""}
    </div>
    <div class="epochs">the leader's epoch cache: ${esc(epochText)}</div>
    <svg class="logs" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">${parts.join("")}</svg>`;
}

function drawReplica(p, broker, y, lo, hi, x) {
  const log = p.logs[String(broker)];
  const inIsr = p.isr.includes(broker);
  const isLeader = broker === p.leader;
  const remote = p.remote_leo[String(broker)];
  const out = [];
  const role = log ? log.role : "no answer";
  out.push(`<text class="label ${isLeader ? "role-leader" : ""}" x="0" y="${y + 24}">broker ${broker} · ${esc(role)}</text>`);
  out.push(`<text x="0" y="${y + 40}"><tspan class="${inIsr ? "isr-in" : "isr-out"}">${inIsr ? "in ISR" : "out of ISR"}</tspan>` +
           `${log && !log.current ? '<tspan class="muted"> · last seen</tspan>' : ""}</text>`);
  if (!log) {
    out.push(`<text class="muted" x="${LABEL_W}" y="${y + 32}">broker ${broker} has not described this replica</text>`);
    return `<g class="replica" data-broker="${broker}" data-in-isr="${inIsr}" data-current="false">${out.join("")}</g>`;
  }
  const first = Math.max(lo, log.log_start);
  for (let o = first; o < log.leo; o++) {
    const fill = colour(epochOf(log.epochs, o));
    if (o < log.hw) {
      out.push(`<rect class="box committed" x="${x(o) + 1}" y="${y + 16}" width="${CELL - 2}" height="24" style="fill: ${fill}"></rect>`);
    } else {
      out.push(`<rect class="box uncommitted" x="${x(o) + 2}" y="${y + 17}" width="${CELL - 4}" height="22" style="stroke: ${fill}"></rect>`);
    }
  }
  if (log.leo >= lo) {
    out.push(`<rect class="box next" x="${x(log.leo) + 1}" y="${y + 16}" width="${CELL - 2}" height="24"></rect>`);
    out.push(`<text class="leo" x="${x(log.leo) + CELL / 2}" y="${y + 11}" text-anchor="middle">LEO ${log.leo}</text>`);
  }
  for (const [e, start] of log.epochs) {
    if (start > lo && start <= hi) {
      out.push(`<line class="epoch-tick" x1="${x(start)}" y1="${y + 13}" x2="${x(start)}" y2="${y + 43}"></line>`);
      out.push(`<text class="epoch-label" x="${x(start) + 2}" y="${y + 11}" style="fill: ${colour(e)}">e${e}</text>`);
    }
  }
  const hwX = x(Math.max(log.hw, lo));
  out.push(`<line class="hw-line" x1="${hwX}" y1="${y + 12}" x2="${hwX}" y2="${y + 46}"></line>`);
  out.push(`<text class="hw" x="${hwX - 3}" y="${y + 57}" text-anchor="end">${log.hw < lo ? "◂ " : ""}HW ${log.hw}</text>`);
  if (remote !== undefined) {
    const rx = x(Math.max(remote, lo));
    out.push(`<path class="remote" d="M${rx} ${y + 42} L${rx - 5} ${y + 51} L${rx + 5} ${y + 51} Z"></path>`);
    out.push(`<text class="remote-label" x="${rx + 7}" y="${y + 58}">${remote < lo ? "◂ " : ""}leader's view ${remote}</text>`);
  }
  const infoX = x(hi + 1) + 14;
  out.push(`<text x="${infoX}" y="${y + 22}">LEO ${log.leo} · HW ${log.hw} · log start ${log.log_start}</text>`);
  const view = isLeader ? "leader epoch " + log.leader_epoch
    : remote !== undefined ? `the leader sees its LEO at ${remote}` : "leader epoch " + log.leader_epoch;
  out.push(`<text class="muted" x="${infoX}" y="${y + 38}">${esc(view)}</text>`);
  if (!log.current) out.push(`<text class="muted" x="${infoX}" y="${y + 54}">no answer now: last values seen</text>`);
  const attributes = `data-broker="${broker}" data-role="${esc(log.role)}" data-leo="${log.leo}" data-hw="${log.hw}"` +
    ` data-in-isr="${inIsr}" data-current="${log.current}"` +
    (remote !== undefined ? ` data-remote-leo="${remote}"` : "");
  return `<g class="replica" ${attributes}>${out.join("")}</g>`;
}

function renderTopics() {
  const container = document.getElementById("topics");
  const seen = new Set();
  for (const topic of Object.values(state.topics)) {
    let section = container.querySelector(`section.topic[data-topic="${CSS.escape(topic.name)}"]`);
    if (!section) {
      section = document.createElement("section");
      section.className = "topic";
      section.dataset.topic = topic.name;
      section.innerHTML = `<h3>topic ${esc(topic.name)}</h3>`;
      container.appendChild(section);
    }
    for (const p of Object.values(topic.partitions)) {
      const key = `${topic.name}/${p.partition}`;
      seen.add(key);
      const json = JSON.stringify(p);
      let view = drawn.get(key);
      if (!view) {
        const element = document.createElement("div");
        element.className = "partition";
        section.appendChild(element);
        view = {element, json: null};
        drawn.set(key, view);
      }
      if (view.json !== json) {
        const e = view.element;
        e.dataset.topic = p.topic;
        e.dataset.partition = p.partition;
        e.dataset.leader = p.leader;
        e.dataset.leaderEpoch = p.leader_epoch;
        e.dataset.isr = p.isr.join(",");
        e.dataset.replicas = p.replicas.join(",");
        e.dataset.state = p.state;
        e.innerHTML = drawPartition(p);
        view.json = json;
      }
    }
  }
  for (const [key, view] of drawn) {
    if (!seen.has(key)) {
      view.element.remove();
      drawn.delete(key);
    }
  }
  for (const section of container.querySelectorAll("section.topic")) {
    if (!(section.dataset.topic in state.topics)) section.remove();
  }
  if (!Object.keys(state.topics).length && !container.querySelector("p")) {
    container.innerHTML = "<p>No topics yet.</p>";
  } else if (Object.keys(state.topics).length) {
    container.querySelectorAll(":scope > p").forEach(p => p.remove());
  }
}

// --- the timeline --------------------------------------------------------------------------------------------

function renderTimeline() {
  const filter = document.getElementById("timeline-filter").value.trim().toLowerCase();
  const rows = [];
  for (let i = timeline.length - 1; i >= 0 && rows.length < TIMELINE_ROWS; i--) {
    const t = timeline[i];
    const text = `${t.who} ${t.where} ${t.what} ${t.why}`.toLowerCase();
    if (filter && !text.includes(filter)) continue;
    rows.push(`<tr><td>${clock(t.time_ms)}</td><td>${esc(t.who)}</td><td>${esc(t.where)}</td>` +
              `<td>${esc(t.what)}</td><td>${esc(t.why)}</td></tr>`);
  }
  document.querySelector("#timeline tbody").innerHTML = rows.join("");
}

// --- the consumer groups -------------------------------------------------------------------------------------

function cell(value) {
  return value === null || value === undefined ? "-" : esc(String(value));
}

function renderGroups() {
  const groups = Object.entries(state.groups || {});
  document.getElementById("groups").innerHTML = groups.map(([id, g]) => {
    const rows = (g.partitions || []).map(r => `<tr data-topic="${esc(r.topic)}" data-partition="${r.partition}">
      <td>${esc(r.topic)}-${r.partition}</td><td>${cell(r.committed)}</td><td>${cell(r.log_end)}</td>
      <td class="lag">${cell(r.lag)}</td><td>${cell(r.member)}</td></tr>`);
    return `<div class="group" data-group="${esc(id)}" data-lag="${g.lag}">
      <div><span class="name">${esc(id)}</span> <span class="badge ${g.state === "Stable" ? "ok" : "warn"}">${esc(g.state)}</span>
      <span class="detail">${g.members} members · lag ${g.lag}</span></div>
      ${g.problem ? `<div class="detail">${esc(g.problem)}</div>` : ""}
      <table><thead><tr><th>partition</th><th>committed</th><th>log end</th><th>lag</th><th>member</th></tr></thead>
      <tbody>${rows.join("")}</tbody></table>
    </div>`;
  }).join("") || "<p>No consumer group.</p>";
}

// --- the stream ----------------------------------------------------------------------------------------------

function render() {
  renderHeader();
  renderBrokers();
  renderTopics();
  renderGroups();
}

function live(on) {
  const badge = document.getElementById("connection");
  badge.dataset.live = String(on);
  badge.textContent = on ? "live" : "reconnecting";
}

function connect() {
  const events = new EventSource("events");
  events.onopen = () => live(true);
  events.onerror = () => live(false);
  events.addEventListener("state", e => {
    state = JSON.parse(e.data);
    timeline = [];
    render();
  });
  events.addEventListener("patch", e => {
    state = applyPatch(state, JSON.parse(e.data));
    render();
  });
  events.addEventListener("timeline", e => {
    timeline = timeline.concat(JSON.parse(e.data));
    if (timeline.length > 2000) timeline = timeline.slice(-2000);
    renderTimeline();
  });
}

document.getElementById("timeline-filter").addEventListener("input", renderTimeline);
connect();
