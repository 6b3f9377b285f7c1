// The clef playground: build a SystemOne request (state, questions, images), send it to this
// server's /v1/decisions, and show each question's options as bars, the raw JSON and the curl
// command. No framework, no other origin (the page's Content-Security-Policy allows only this
// server).
"use strict";

const EXAMPLE = {
  state: "Production database is down since 09:40, customers cannot log in, payments fail.",
  questions: [
    { id: "department", type: "choice", instructions: "Which team should handle this ticket?",
      criteria: "engineering: Software, infrastructure and outages\nsales: Pricing, quotes and purchases\nsupport: Account and usage help" },
    { id: "urgency", type: "score", instructions: "How urgent is this ticket?",
      criteria: "Not urgent\nLow\nMedium\nHigh\nCritical" },
    { id: "outage", type: "noul", instructions: "Is a service outage reported?", criteria: "" },
  ],
};

const $ = (id) => document.getElementById(id);
const images = [];  // {name, uri}

function addQuestion(q) {
  const node = $("question-template").content.firstElementChild.cloneNode(true);
  const f = (name) => node.querySelector(`[name=${name}]`);
  f("id").value = q.id || "";
  f("type").value = q.type || "noul";
  f("instructions").value = q.instructions || "";
  f("criteria").value = q.criteria || "";
  const hint = node.querySelector(".hint");
  const options = node.querySelector(".options");
  const sync = () => {
    const type = f("type").value;
    options.hidden = type === "noul";
    hint.textContent = type === "choice" ? "one per line: id: description"
                                         : "one level per line, lowest first";
  };
  f("type").addEventListener("change", sync);
  node.querySelector(".remove").addEventListener("click", () => node.remove());
  sync();
  $("questions").appendChild(node);
  return node;
}

function loadExample() {
  $("state").value = EXAMPLE.state;
  $("state-json").checked = false;
  $("questions").replaceChildren();
  EXAMPLE.questions.forEach(addQuestion);
  images.length = 0;
  renderImages();
}

function parseCriteria(type, text) {
  const lines = text.split("\n").map((l) => l.trim()).filter((l) => l.length > 0);
  if (type === "score") return lines;
  const out = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    const id = (colon < 0 ? line : line.slice(0, colon)).trim();
    out[id] = colon < 0 ? id : line.slice(colon + 1).trim();
  }
  return out;
}

function buildRequest() {
  const body = {};
  const stateText = $("state").value;
  if ($("state-json").checked) {
    try {
      body.state = JSON.parse(stateText);
    } catch (e) {
      throw { field: "state", message: "the state is not valid JSON: " + e.message };
    }
  } else {
    body.state = stateText;
  }
  body.questions = {};
  for (const node of $("questions").querySelectorAll("fieldset.question")) {
    const f = (name) => node.querySelector(`[name=${name}]`);
    const id = f("id").value.trim();
    const type = f("type").value;
    const q = { type };
    if (f("instructions").value.trim()) q.instructions = f("instructions").value.trim();
    if (type !== "noul") q.criteria = parseCriteria(type, f("criteria").value);
    body.questions[id] = q;
  }
  if (images.length > 0) body.images = images.map((i) => i.uri);
  return body;
}

function shellQuote(text) {
  return "'" + text.replace(/'/g, "'\\''") + "'";
}

function bar(label, p, chosen, testid) {
  const row = document.createElement("div");
  row.className = "bar" + (chosen ? " chosen" : "");
  row.dataset.testid = testid;
  row.dataset.option = label;
  row.dataset.prob = String(p);
  const name = document.createElement("span");
  name.className = "label";
  name.textContent = label + (chosen ? " ✓" : "");
  const track = document.createElement("span");
  track.className = "track";
  const fill = document.createElement("span");
  fill.className = "fill";
  fill.style.width = (Math.max(0, Math.min(1, p)) * 100).toFixed(2) + "%";
  track.appendChild(fill);
  const value = document.createElement("span");
  value.className = "value";
  value.textContent = p.toFixed(4);
  row.setAttribute("aria-label", `${label}: ${p.toFixed(4)}${chosen ? ", chosen" : ""}`);
  row.append(name, track, value);
  return row;
}

function renderAnswers(response) {
  const box = $("answers");
  box.replaceChildren();
  for (const [id, a] of Object.entries(response.answers)) {
    const card = document.createElement("article");
    card.className = "answer";
    card.dataset.testid = "question-" + id;
    const title = document.createElement("h3");
    title.textContent = `${id} (${a.type})`;
    const summary = document.createElement("div");
    summary.className = "summary";
    card.append(title, summary);
    if (a.type === "noul") {
      summary.textContent = `p(true) = ${a.noul.toFixed(4)}`;
      card.append(bar("true", a.noul, a.noul >= 0.5, "option"));
      card.append(bar("false", Number((1 - a.noul).toFixed(4)), a.noul < 0.5, "option"));
    } else {
      const best = a.type === "choice" ? a.choice
          : Object.entries(a.probabilities).reduce((m, e) => (e[1] > m[1] ? e : m))[0];
      summary.textContent = a.type === "choice"
          ? `choice ${a.choice}, confidence ${a.confidence.toFixed(4)}`
          : `score ${a.score.toFixed(4)}, confidence ${a.confidence.toFixed(4)}`;
      for (const [option, p] of Object.entries(a.probabilities)) {
        const label = a.type === "score" ? `${option} ${a.legend[option] ?? ""}`.trim() : option;
        const row = bar(label, p, option === best, "option");
        row.dataset.option = option;
        card.append(row);
      }
    }
    box.appendChild(card);
  }
}

function showError(status, body) {
  const e = body && body.error ? body.error : { message: String(body), code: "", param: null };
  const box = $("error");
  box.hidden = false;
  box.dataset.testid = "error";
  box.textContent = `${status} ${e.code || ""}: ${e.message}` + (e.param ? ` (field: ${e.param})` : "");
  if (e.param) {
    const top = e.param.split(".")[0];
    if (top === "state") $("state").classList.add("field-error");
    if (top === "questions") {
      const qid = e.param.split(".")[1];
      for (const node of $("questions").querySelectorAll("fieldset.question")) {
        if (node.querySelector("[name=id]").value.trim() === qid) node.classList.add("field-error");
      }
    }
  }
}

// API keys: a server started with --api-key answers 401 without one; the page then asks for it
// and sends it as "Authorization: Bearer KEY". It stays in this tab (sessionStorage).
const KEY_STORE = "clef.apiKey";

function apiHeaders(extra = {}) {
  const key = sessionStorage.getItem(KEY_STORE);
  return key ? { ...extra, Authorization: "Bearer " + key } : extra;
}

function askForKey() {
  $("key-box").hidden = false;
  $("api-key").focus();
}

async function send(event) {
  if (event) event.preventDefault();
  // A key typed and sent at once (Ctrl+Enter) has not had its change event yet.
  const typed = $("api-key").value.trim();
  if (typed && typed !== sessionStorage.getItem(KEY_STORE)) sessionStorage.setItem(KEY_STORE, typed);
  for (const el of document.querySelectorAll(".field-error")) el.classList.remove("field-error");
  $("error").hidden = true;
  let body;
  try {
    body = buildRequest();
  } catch (e) {
    showError("not sent", { error: { message: e.message, code: "", param: e.field } });
    return;
  }
  const text = JSON.stringify(body);
  const url = new URL("/v1/decisions", location.href).href;
  // The key itself stays out of the command (it may be pasted into a chat): $CLEF_API_KEY.
  const auth = sessionStorage.getItem(KEY_STORE) ? ` -H "Authorization: Bearer $CLEF_API_KEY"` : "";
  $("curl").textContent = `curl -s ${shellQuote(url)} -H 'Content-Type: application/json'${auth} -d ${shellQuote(text)}`;
  $("curl-box").hidden = false;
  $("status").textContent = "deciding…";
  const t0 = performance.now();
  let res;
  try {
    res = await fetch("/v1/decisions", { method: "POST", headers: apiHeaders({ "Content-Type": "application/json" }), body: text });
  } catch (e) {
    $("status").textContent = "";
    showError("network", { error: { message: e.message, code: "", param: null } });
    return;
  }
  const ms = performance.now() - t0;
  const raw = await res.text();
  let json = null;
  try { json = JSON.parse(raw); } catch (e) { json = raw; }
  $("raw").textContent = typeof json === "string" ? json : JSON.stringify(json, null, 2);
  $("raw-box").hidden = false;
  if (!res.ok) {
    $("status").textContent = "";
    $("answers").replaceChildren();
    showError(res.status, json);
    if (res.status === 401) askForKey();
    return;
  }
  const cached = res.headers.get("X-Clef-Cached-Tokens") || "0";
  $("status").dataset.testid = "status";
  $("status").dataset.tokens = String(json.usage.input_tokens);
  $("status").textContent = `${json.usage.input_tokens} tokens (${cached} from the state cache), ` +
      `${ms.toFixed(0)} ms, request ${res.headers.get("X-Request-Id") || ""}`;
  renderAnswers(json);
}

function readFiles(files) {
  for (const file of files) {
    if (!/^image\/(png|jpeg|webp)$/.test(file.type)) continue;
    const reader = new FileReader();
    reader.onload = () => { images.push({ name: file.name, uri: reader.result }); renderImages(); };
    reader.readAsDataURL(file);
  }
}

function renderImages() {
  const list = $("images");
  list.replaceChildren();
  images.forEach((img, i) => {
    const li = document.createElement("li");
    const pic = document.createElement("img");
    pic.src = img.uri;
    pic.alt = img.name;
    const remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "Remove";
    remove.setAttribute("aria-label", "Remove " + img.name);
    remove.addEventListener("click", () => { images.splice(i, 1); renderImages(); });
    li.append(pic, remove);
    list.appendChild(li);
  });
}

async function describeModel() {
  try {
    const res = await fetch("/v1/models", { headers: apiHeaders() });
    if (res.status === 401) {
      $("model").textContent = "enter the server's API key to see its model";
      askForKey();
      return;
    }
    const m = (await res.json()).data[0];
    const images = m.capabilities ? m.capabilities.images : true;
    $("model").textContent = `model ${m.id}, context ${m.context_size} tokens` +
        (m.limits ? `, up to ${m.limits.max_questions} questions` : "") +
        (images ? "" : ", no images (no mmproj)");
    $("images-section").hidden = !images;
  } catch (e) {
    $("model").textContent = "the model is not loaded yet";
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("form").addEventListener("submit", send);
  $("add-question").addEventListener("click", () => addQuestion({ type: "choice" }).querySelector("[name=id]").focus());
  $("load-example").addEventListener("click", loadExample);
  $("copy-curl").addEventListener("click", () => navigator.clipboard && navigator.clipboard.writeText($("curl").textContent));
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) send(e);
  });
  const drop = $("drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); readFiles(e.dataTransfer.files); });
  drop.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); $("image-input").click(); } });
  $("image-input").addEventListener("change", (e) => readFiles(e.target.files));
  $("api-key").value = sessionStorage.getItem(KEY_STORE) || "";
  $("api-key").addEventListener("change", (e) => {
    const key = e.target.value.trim();
    if (key) sessionStorage.setItem(KEY_STORE, key); else sessionStorage.removeItem(KEY_STORE);
    describeModel();
  });
  loadExample();
  describeModel();
});
