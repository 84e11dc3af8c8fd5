// The actoviq serve page: renders the gui copy of a run's semantic events (SSE over fetch,
// so the token travels in a header, never in a URL), approvals as buttons, sessions and usage.
"use strict";

const token = document.querySelector('meta[name="actoviq-token"]').content;
const fallbackSession = document.querySelector('meta[name="actoviq-session"]').content;
const $ = (id) => document.getElementById(id);
const transcriptBox = $("transcript");
let session = decodeURIComponent(location.hash.slice(1)) || fallbackSession;
let activeRun = null;
let view = null;
let streaming = false;

function api(path, options = {}) {
  const headers = { Authorization: `Bearer ${token}` };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  return fetch(path, { ...options, headers, credentials: "same-origin" });
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  transcriptBox.appendChild(node);
  transcriptBox.scrollTop = transcriptBox.scrollHeight;
  return node;
}

function short(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > 160 ? `${text.slice(0, 159)}…` : text;
}

function setStatus(text) {
  $("status").textContent = text;
}

function newView() {
  return { bubble: null, bubbleKey: null, tools: new Map() };
}

function toolLine(callId, name, input) {
  let line = view.tools.get(callId);
  if (!line) {
    line = el("div", "tool");
    line.dataset.callId = callId;
    view.tools.set(callId, line);
  }
  line.dataset.name = name;
  line.textContent = `${name} ${input === undefined ? "" : short(input)} …`;
  return line;
}

function toolOutcome(callId, name, outcome, detail) {
  const line = view.tools.get(callId) || toolLine(callId, name, undefined);
  line.classList.add(outcome);
  line.textContent = line.textContent.replace(/ …$/, "") + ` → ${outcome}${detail ? `: ${short(detail)}` : ""}`;
}

function approvalCard(runId, interruptions) {
  const waiting = interruptions.filter((i) => i.kind === "approval");
  if (!waiting.length) return;
  const card = el("div", "approval");
  card.dataset.runId = runId;
  const text = waiting.map((i) => `${i.toolName || "tool"} (${i.callId || i.id})`).join(", ");
  card.appendChild(document.createTextNode(`Approval needed: ${text}. `));
  for (const [label, outcome] of [["Approve", "approve"], ["Reject", "reject"]]) {
    const button = document.createElement("button");
    button.className = outcome;
    button.textContent = label;
    button.addEventListener("click", () => decide(card, runId, waiting, outcome));
    card.appendChild(button);
  }
}

function onSemantic(event) {
  const data = event.data || {};
  if (!activeRun) activeRun = event.runId;
  switch (event.type) {
    case "text.delta": {
      const key = `${event.runId}:${data.iteration}:${data.outputIndex || 0}`;
      if (!view.bubble || view.bubbleKey !== key) {
        view.bubble = el("div", "msg assistant", "");
        view.bubbleKey = key;
      }
      view.bubble.textContent += data.delta || "";
      transcriptBox.scrollTop = transcriptBox.scrollHeight;
      break;
    }
    case "tool.started":
      view.bubble = null;
      toolLine(data.callId, data.publicName || data.name || "tool", data.input);
      break;
    case "tool.completed":
      toolOutcome(data.callId, data.name, "ok", data.outputText);
      break;
    case "tool.failed":
      toolOutcome(data.callId, data.name, "failed", data.outputText);
      break;
    case "tool.rejected":
      toolOutcome(data.callId, data.name, "rejected");
      break;
    case "interruption.requested":
      if (data.scope === "run") approvalCard(event.runId, data.interruptions || []);
      break;
    case "interruption.cancelled":
      el("div", "notice", `cancelled: ${data.reason || ""}`);
      break;
    case "error":
      el("div", "error", `error ${data.code || ""}: ${data.message || ""}`);
      break;
    default:
      break;
  }
}

async function consume(response) {
  if (!response.ok) {
    let message = `${response.status}`;
    try {
      const body = await response.json();
      message = (body.error && body.error.message) || message;
    } catch (_) { /* not JSON */ }
    el("div", "error", `refused: ${message}`);
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    const blocks = buffer.split(/\r?\n\r?\n/);
    buffer = blocks.pop();
    for (const block of blocks) {
      let name = "message";
      const lines = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) lines.push(line.slice(5).replace(/^ /, ""));
      }
      if (!lines.length) continue;
      const payload = JSON.parse(lines.join("\n"));
      if (name === "semantic") onSemantic(payload);
      else if (name === "result") {
        if (payload.status !== "completed") el("div", "notice", `run ${payload.status}`);
      } else if (name === "error") {
        el("div", "error", `error ${payload.error.code}: ${payload.error.message}`);
      }
    }
  }
}

async function runStream(request) {
  view = newView();
  activeRun = null;
  streaming = true;
  setStatus("answering…");
  $("send").disabled = true;
  $("stop").disabled = false;
  try {
    await consume(await request);
  } catch (error) {
    el("div", "error", `connection: ${error}`);
  } finally {
    streaming = false;
    activeRun = null;
    $("send").disabled = false;
    $("stop").disabled = true;
    setStatus("idle");
    await Promise.all([refreshUsage(), loadSessions()]);
  }
}

async function decide(card, runId, interruptions, outcome) {
  card.classList.add("decided");
  for (const button of card.querySelectorAll("button")) button.disabled = true;
  const decisions = interruptions.map((i) => ({ interruptionId: i.id, outcome }));
  await runStream(api(`/api/runs/${encodeURIComponent(runId)}/decisions`, {
    method: "POST",
    body: JSON.stringify({ decisions }),
  }));
}

async function send(event) {
  event.preventDefault();
  const text = $("prompt").value.trim();
  if (!text || $("send").disabled) return;
  $("prompt").value = "";
  el("div", "msg user", text);
  await runStream(api(`/api/sessions/${encodeURIComponent(session)}/messages`, {
    method: "POST",
    body: JSON.stringify({ text }),
  }));
}

function renderUsage(usage, runs) {
  if (!usage || !usage.requests) {
    $("usage").textContent = "no usage yet";
    return;
  }
  const cost = usage.costUsd ? `, $${usage.costUsd.toFixed(4)}` : "";
  $("usage").textContent =
    `${runs} run(s), ${usage.requests} request(s), ${usage.inputTokens} in / ${usage.outputTokens} out tokens${cost}`;
}

async function refreshUsage() {
  const response = await api(`/api/sessions/${encodeURIComponent(session)}`);
  if (!response.ok) return;
  const body = await response.json();
  renderUsage(body.usage, body.runs);
}

async function loadSessions() {
  const response = await api("/api/sessions");
  if (!response.ok) return;
  const body = await response.json();
  const list = $("sessions");
  list.textContent = "";
  const names = body.sessions.map((s) => s.sessionId);
  if (!names.includes(session)) names.unshift(session);
  for (const name of names) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.textContent = name;
    button.dataset.session = name;
    if (name === session) button.className = "current";
    button.addEventListener("click", () => openSession(name));
    item.appendChild(button);
    list.appendChild(item);
  }
}

async function openSession(name) {
  if (streaming) return; // switching would clear the transcript the running answer draws into
  session = name;
  location.hash = encodeURIComponent(name);
  $("current-session").textContent = `session ${name}`;
  transcriptBox.textContent = "";
  view = newView();
  const response = await api(`/api/sessions/${encodeURIComponent(name)}`);
  if (response.ok) {
    const body = await response.json();
    for (const item of body.items) {
      if (item.type === "text" && (item.role === "user" || item.role === "assistant")) {
        el("div", `msg ${item.role}`, item.text);
      } else if (item.type === "tool_call") {
        toolLine(item.id, item.name, item.input);
      } else if (item.type === "tool_result") {
        const outcome = item.status === "success" ? "ok" : item.status;
        toolOutcome(item.callId, item.name || "tool", outcome, item.output);
      }
    }
    for (const paused of body.pending) approvalCard(paused.runId, paused.interruptions);
    renderUsage(body.usage, body.runs);
  }
  await loadSessions();
}

async function start() {
  $("composer").addEventListener("submit", send);
  $("prompt").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) send(event);
  });
  $("stop").addEventListener("click", () => {
    if (activeRun) api(`/api/runs/${encodeURIComponent(activeRun)}/cancel`, { method: "POST", body: "{}" });
  });
  $("new-session").addEventListener("submit", (event) => {
    event.preventDefault();
    const name = $("session-name").value.trim();
    $("session-name").value = "";
    if (name) openSession(name);
  });
  const info = await api("/api/info");
  if (info.ok) $("model").textContent = (await info.json()).model;
  // Sending waits for the history: opening a session clears the transcript it draws into.
  await openSession(session);
  $("send").disabled = false;
  setStatus("idle");
}

start();
