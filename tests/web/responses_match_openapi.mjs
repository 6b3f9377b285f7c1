// Every kind of answer a running `clef serve --demo` gives (success and each error status it can
// be driven to here) validates against the schema web/openapi.json documents for its path,
// method and status (ajv, JSON Schema 2020-12, pinned in package.json); an undocumented status
// fails. The served /openapi.json is the file's bytes.
// usage: node responses_match_openapi.mjs CLEF_BINARY OPENAPI_FILE   (77: packages missing)
import { readFileSync } from "node:fs";
import net from "node:net";
import { startDemoServer } from "./clef_server.mjs";

let Ajv2020;
try {
  Ajv2020 = (await import("ajv/dist/2020.js")).default;
} catch (e) {
  console.error("SKIP: ajv is not installed (scripts/setup installs it): " + e.message);
  process.exit(77);
}
const [clef, openapiFile] = process.argv.slice(2);
const docText = readFileSync(openapiFile, "utf8");
const doc = JSON.parse(docText);
const ajv = new Ajv2020({ strict: false, discriminator: true, allErrors: true });
ajv.addSchema(doc, "openapi");
const pointer = (...parts) => parts.map((p) => String(p).replace(/~/g, "~0").replace(/\//g, "~1")).join("/");

let failures = 0;
let checked = 0;
function fail(message) {
  failures++;
  console.error("FAIL: " + message);
}

/// Validates one answer against the document.
function check(label, pathName, method, status, contentType, body) {
  checked++;
  const operation = doc.paths[pathName]?.[method];
  if (!operation) return fail(`${label}: ${method.toUpperCase()} ${pathName} is not documented`);
  const response = operation.responses[String(status)];
  if (!response) return fail(`${label}: status ${status} of ${method.toUpperCase()} ${pathName} is not documented`);
  const type = (contentType || "").split(";")[0].trim();
  if (!response.content?.[type]) return fail(`${label}: ${status} ${type} is not a documented content type`);
  if (type !== "application/json") return;
  const ref = "openapi#/" + pointer("paths", pathName, method, "responses", status, "content", type, "schema");
  const validate = ajv.getSchema(ref);
  let value;
  try {
    value = JSON.parse(body);
  } catch (e) {
    return fail(`${label}: body is not JSON: ${body.slice(0, 200)}`);
  }
  if (!validate(value)) {
    fail(`${label}: ${status} body does not match its schema: ${JSON.stringify(validate.errors.slice(0, 3))}\n  body: ${body.slice(0, 300)}`);
  }
}

/// Sends a request with fetch and checks its answer (`as`: the documented method to check against,
/// for a wrong method's 405, which its endpoint's operation documents).
async function http(port, label, pathName, init = {}, as = null) {
  const res = await fetch(`http://127.0.0.1:${port}${pathName}`, init);
  const body = await res.text();
  check(label, pathName, as || (init.method || "GET").toLowerCase(), res.status, res.headers.get("content-type"), body);
  return { status: res.status, body, headers: res.headers };
}

/// A raw request (framing fetch will not send); returns status, content type and body.
function raw(port, bytes) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let data = "";
    socket.on("data", (d) => (data += d.toString("latin1")));
    socket.on("error", reject);
    socket.on("close", () => {
      const [head, ...rest] = data.split("\r\n\r\n");
      const status = Number(head.split(" ")[1]);
      const type = /content-type: *([^\r\n]*)/i.exec(head)?.[1] ?? "";
      resolve({ status, type, body: rest.join("\r\n\r\n") });
    });
    socket.write(bytes);
  });
}

function startServer(args) {
  return startDemoServer(clef, args);
}

const card = JSON.stringify({
  state: "Production database is down, customers cannot log in",
  questions: {
    department: { type: "choice", instructions: "Which team?", criteria: { engineering: "Outages", sales: "Pricing" } },
    urgency: { type: "score", criteria: ["low", "medium", "high"] },
    outage: { type: "noul", instructions: "Is a service outage reported?" },
  },
});
const json = (body) => ({ method: "POST", headers: { "Content-Type": "application/json" }, body });

const server = startServer(["--max-body", "200000"]);
try {
  const port = await server.port;
  // While the model loads: whatever arrives must be documented (503 loading, or already 200).
  await http(port, "health while loading", "/health");
  await http(port, "decision while loading", "/v1/decisions", json(card));
  for (let i = 0; i < 600; i++) {
    const h = await fetch(`http://127.0.0.1:${port}/health`);
    if (h.status === 200) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await http(port, "health", "/health");
  await http(port, "models", "/v1/models");
  await http(port, "metrics", "/metrics");
  const served = await http(port, "openapi", "/openapi.json");
  if (served.body !== docText) fail("GET /openapi.json is not web/openapi.json byte for byte");
  await http(port, "playground", "/");
  await http(port, "decision", "/v1/decisions", json(card));
  await http(port, "systemone", "/v1/systemone", json(card));
  await http(port, "invalid json", "/v1/decisions", json("{"));
  await http(port, "bad question type", "/v1/decisions", json(JSON.stringify({ state: 1, questions: { q: { type: "maybe" } } })));
  await http(port, "wrong method", "/v1/decisions", {}, "post");
  await http(port, "wrong media type", "/v1/decisions", { method: "POST", headers: { "Content-Type": "text/plain" }, body: card });
  const many = {};
  for (let i = 0; i < 65; i++) many["q" + i] = { type: "noul" };
  await http(port, "too many questions", "/v1/decisions", json(JSON.stringify({ state: 1, questions: many })));
  const png = "data:image/png;base64,iVBORw0KGgo=";
  await http(port, "too many images", "/v1/decisions", json(JSON.stringify({ state: 1, questions: { q: { type: "noul" } }, images: [png, png, png, png, png] })));
  await http(port, "image url", "/v1/decisions", json(JSON.stringify({ state: 1, questions: { q: { type: "noul" } }, images: ["https://example.com/a.png"] })));
  await http(port, "body too large", "/v1/decisions", json(JSON.stringify({ state: "x".repeat(250000), questions: { q: { type: "noul" } } })));
  await http(port, "bad image", "/v1/decisions", json(JSON.stringify({ state: 1, questions: { q: { type: "noul" } }, images: ["data:image/png;base64,AAAA"] })));
  // Raw framing the HTTP client will not send.
  const r411 = await raw(port, "POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n");
  check("no length", "/v1/decisions", "post", r411.status, r411.type, r411.body);
  const r414 = await raw(port, "GET /" + "a".repeat(40000) + " HTTP/1.1\r\nHost: x\r\n\r\n");
  check("long line", "/v1/decisions", "post", r414.status, r414.type, r414.body);
  const r431 = await raw(port, "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + "b".repeat(9000) + "\r\n\r\n");
  check("big header", "/v1/decisions", "post", r431.status, r431.type, r431.body);
  const r404 = await raw(port, "GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  check("unknown path", "/", "get", r404.status, r404.type, r404.body);
} finally {
  server.stop();
}
// A full queue (429) and a slow client (408): one decision runs, one waits, the third is refused.
const busy = startServer(["--queue-size", "1", "--context-size", "8192", "--header-timeout", "1"]);
try {
  const port = await busy.port;
  for (let i = 0; i < 600 && (await fetch(`http://127.0.0.1:${port}/health`)).status !== 200; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const long = JSON.stringify({ state: "w ".repeat(7000), questions: { q: { type: "noul" } } });
  const running = fetch(`http://127.0.0.1:${port}/v1/decisions`, json(long));
  await new Promise((r) => setTimeout(r, 150));
  const waiting = fetch(`http://127.0.0.1:${port}/v1/decisions`, json(long));
  await new Promise((r) => setTimeout(r, 150));
  const full = await http(port, "queue full", "/v1/decisions", json(card));
  if (full.status !== 429) console.error(`note: the queue was not full (status ${full.status})`);
  await Promise.all([running, waiting]);
  const r408 = await raw(port, "POST /v1/decisions HTTP/1.1\r\nHost: x\r\n");  // never finishes
  check("slow headers", "/v1/decisions", "post", r408.status, r408.type, r408.body);
} finally {
  busy.stop();
}
// --no-playground: / is a documented 404.
const bare = startServer(["--no-playground"]);
try {
  const port = await bare.port;
  await http(port, "no playground", "/");
} finally {
  bare.stop();
}
// API keys: each keyed endpoint's 401 is documented; /health and the web files stay open.
const keyed = startServer(["--api-key", "sk-openapi-test"]);
try {
  const port = await keyed.port;
  await keyed.ready();
  const missing = await http(port, "no key", "/v1/decisions", json(card));
  if (missing.status !== 401) fail(`a keyed server answered ${missing.status} without a key`);
  if (!/^Bearer /.test(missing.headers.get("www-authenticate") || "")) fail("401 without WWW-Authenticate: Bearer");
  await http(port, "wrong key", "/v1/systemone", { ...json(card), headers: { "Content-Type": "application/json", Authorization: "Bearer nope" } });
  await http(port, "models without a key", "/v1/models");
  await http(port, "metrics without a key", "/metrics");
  const keyedOk = await http(port, "decision with X-API-Key", "/v1/decisions", { ...json(card), headers: { "Content-Type": "application/json", "X-API-Key": "sk-openapi-test" } });
  if (keyedOk.status !== 200) fail(`X-API-Key answered ${keyedOk.status}`);
  for (const open of ["/health", "/openapi.json", "/"]) {
    const r = await http(port, "open " + open, open);
    if (r.status !== 200) fail(`${open} needs a key (${r.status})`);
  }
} finally {
  keyed.stop();
}
console.log(`${checked} answers checked against web/openapi.json, ${failures} failures`);
process.exit(failures === 0 ? 0 : 1);
