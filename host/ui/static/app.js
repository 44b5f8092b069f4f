// subagent-host dashboard: live parts of the server-rendered pages. Child text only ever reaches the page through
// textContent (never innerHTML), with control characters, line separators and bidi overrides made visible.
"use strict";

const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function visible(value) {
  return String(value).replace(CONTROL, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100 ? "\\x" + code.toString(16).padStart(2, "0") : "\\u" + code.toString(16).padStart(4, "0");
  });
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = visible(text);
  return node;
}

function seconds(ms) {
  return typeof ms === "number" ? (ms / 1000).toFixed(1) + "s" : "-";
}

// A subdirectory batch keeps its own runs/ and sessions/: the server puts "batch=<name>", already URL-encoded, in
// data-batch-query, and every link to one of its runs or sessions, and every request for a run's events or stderr,
// carries it as the query.
function batchQuery() {
  const query = document.body.dataset.batchQuery;
  return query ? "?" + query : "";
}

// -- the runs page: refreshed every second with the current filters -------------------------------------------------

function runLink(runId) {
  const link = el("a", "", runId.slice(0, 8));
  link.href = "/runs/" + encodeURIComponent(runId) + batchQuery();
  return link;
}

function runRow(run) {
  const row = el("tr");
  row.dataset.run = run.run_id;
  const cells = [runLink(run.run_id), run.start_time || "-", run.provider || "-", null, seconds(run.duration_ms), null,
    run.task];
  cells.forEach((value, i) => {
    const cell = el("td", i === 6 ? "task" : "");
    if (i === 3) {
      cell.appendChild(el("span", "status status-" + String(run.status).replace(/[^a-z-]/g, ""), run.status));
    } else if (i === 5) {
      if (run.session_id) {
        const link = el("a", "", run.session_id.slice(0, 10));
        link.href = "/sessions/" + encodeURIComponent(run.session_id) + batchQuery();
        cell.appendChild(link);
      } else {
        cell.textContent = "-";
      }
    } else if (value instanceof Node) {
      cell.appendChild(value);
    } else {
      cell.textContent = visible(value);
    }
    row.appendChild(cell);
  });
  return row;
}

async function refreshRuns() {
  const body = document.getElementById("runs-body");
  try {
    const response = await fetch("/api/runs" + window.location.search, { credentials: "same-origin" });
    if (!response.ok) return;
    const data = await response.json();
    const rows = data.runs.map(runRow);
    body.replaceChildren(...rows);
    document.getElementById("runs-shown").textContent = String(rows.length);
    document.getElementById("runs-total").textContent = String(data.total);
  } catch (error) {
    // The server is gone or busy: keep what is shown and try again on the next tick.
  }
}

// -- the run page: the transcript streamed from the records ---------------------------------------------------------

class Transcript {
  constructor(root) {
    this.root = root;
    this.blocks = new Map();
  }

  block(index, type) {
    let block = this.blocks.get(index);
    if (block && block.type === type) return block;
    if (block) block.node.remove();
    let node;
    let body;
    if (type === "reasoning") {
      node = el("details", "thinking");
      node.appendChild(el("summary", "", "thinking"));
      body = el("pre", "reasoning");
      node.appendChild(body);
    } else if (type === "tool-call") {
      node = el("div", "tool");
      body = node;
    } else {
      node = el("pre", "text");
      body = node;
    }
    block = { type, node, body, text: "" };
    this.blocks.set(index, block);
    const later = [...this.blocks.entries()].filter(([i]) => i > index).sort((a, b) => a[0] - b[0]);
    this.root.insertBefore(node, later.length ? later[0][1].node : null);
    return block;
  }

  setText(block, text) {
    block.text = text;
    block.body.textContent = visible(text);
  }

  tool(block, data) {
    const shown = (v) => (typeof v === "string" && v ? v.replace(/\n/g, " ") : "-");
    this.setText(block, "[tool] " + shown(data.title) + " (" + shown(data.kind) + ", " + shown(data.status) + ")");
  }

  chunk(data) {
    const index = typeof data.index === "number" ? data.index : -1;
    if (data.type === "block-start") {
      this.block(index, data.block_type === "tool-call" ? "tool-call" : data.block_type === "reasoning" ? "reasoning" : "text");
    } else if (data.type === "text-delta" || data.type === "reasoning-delta") {
      const block = this.block(index, data.type === "text-delta" ? "text" : "reasoning");
      this.setText(block, block.text + String(data.text || ""));
    } else if (data.type === "tool-call") {
      this.tool(this.block(index, "tool-call"), data);
    } else if (data.type === "block-end" && data.block && typeof data.block === "object") {
      this.finish(index, data.block);
    }
  }

  finish(index, content) {
    if (content.type === "tool-call") {
      this.tool(this.block(index, "tool-call"), content);
    } else if (typeof content.text === "string") {
      this.setText(this.block(index, content.type === "reasoning" ? "reasoning" : "text"), content.text);
    }
  }

  message(data) {
    if (!Array.isArray(data.content)) return;
    this.root.replaceChildren();
    this.blocks = new Map();
    data.content.forEach((content, i) => {
      if (content && typeof content === "object") this.finish(i, content);
    });
    if (data.interrupted === true) this.root.appendChild(el("p", "stopped", "[Stopped]"));
  }
}

function followRun(runId) {
  const transcript = new Transcript(document.getElementById("transcript"));
  const source = new EventSource("/api/runs/" + encodeURIComponent(runId) + "/events" + batchQuery());
  source.onmessage = (event) => {
    const record = JSON.parse(event.data);
    const data = record.data && typeof record.data === "object" ? record.data : {};
    if (record.type === "prompt" && Array.isArray(data.content)) {
      const text = data.content.map((block) => (block && typeof block.text === "string" ? block.text : "")).join("");
      document.getElementById("prompt").textContent = visible(text);
    } else if (record.type === "chunk") {
      transcript.chunk(data);
    } else if (record.type === "assistant/message") {
      transcript.message(data);
    } else if (record.type === "permission") {
      transcript.root.appendChild(el("p", "permission",
        "[permission] " + (data.request_kind || "-") + ": " + (data.decision || "-") + " (policy " + (data.policy || "-") + ")"));
    } else if (record.type === "run/end") {
      const status = document.getElementById("run-status");
      status.textContent = visible(data.stop_reason || "unknown");
      status.className = "status status-" + String(data.stop_reason || "").replace(/[^a-z-]/g, "");
      document.getElementById("run-duration").textContent = seconds(data.duration_ms);
      const outcome = document.getElementById("outcome");
      if (typeof data.diagnostic === "string") {
        document.getElementById("diagnostic").textContent = visible(data.diagnostic);
        outcome.hidden = false;
      }
      if (Array.isArray(data.hints)) {
        const hints = document.getElementById("hints");
        data.hints.forEach((hint) => hints.appendChild(el("li", "", "hint: " + hint)));
        outcome.hidden = outcome.hidden && data.hints.length === 0;
      }
    }
  };
  source.addEventListener("end", () => {
    source.close();
    document.body.dataset.streamEnded = "true";
  });
  const stderr = document.getElementById("stderr");
  stderr.addEventListener("toggle", async () => {
    if (!stderr.open || stderr.dataset.loaded) return;
    stderr.dataset.loaded = "true";
    const url = "/api/runs/" + encodeURIComponent(runId) + "/stderr" + batchQuery();
    const response = await fetch(url, { credentials: "same-origin" });
    document.getElementById("stderr-text").textContent = response.ok ? visible(await response.text()) : "(no stderr kept)";
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const page = document.body.dataset.page;
  if (page === "runs") {
    window.setInterval(refreshRuns, 1000);
  } else if (page === "run") {
    followRun(document.body.dataset.run);
  }
});
