#!/usr/bin/env node
// Overload benchmark of `clef serve` (issue 28, item 3): a flood of decision clients, and beside
// it the probes a load balancer sends, all measured in one run.
//
//   node bench/overload.mjs [CLEF_BINARY] [-- extra `clef serve` args]
//
// CLEF_BINARY defaults to build/clef; the server is `clef serve --demo --port 0 --threads 1` plus
// the extra args. Environment: CLIENTS (200) decision clients, each on its own keep-alive
// connection, sending the next request as soon as it has an answer (after a refusal it waits
// RETRY_MS, 10); DURATION (20) seconds. Every 100 ms a probe round opens a new connection per
// request (as HAProxy's checks do) for GET /health, /metrics, /v1/models (the reserved lane) and,
// as the control, GET /openapi.json (a static file served on the general lane).
//
// Prints, per status, the decisions' count and latency (p50 / p99 / max), the refusals' latency,
// and each probe path's latency with how many took over 100 ms, then one JSON line (CLEF_OVERLOAD)
// with the same figures. Exit 0 unless the server could not be started.

import { spawn } from "node:child_process";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
let clef = path.join(here, "..", "build", "clef");
if (argv.length > 0 && argv[0] !== "--") clef = argv.shift();
if (argv[0] === "--") argv.shift();
const clients = Number(process.env.CLIENTS ?? 200);
const duration = Number(process.env.DURATION ?? 20) * 1000;
const retryMs = Number(process.env.RETRY_MS ?? 10);

const body = JSON.stringify({
  state: "Production database is down, customers cannot log in",
  questions: {
    department: {
      type: "choice",
      criteria: { engineering: "Backend, infrastructure", sales: "Pricing, contracts",
                  support: "Customer help" },
    },
    urgency: { type: "score", criteria: ["low", "medium", "high", "critical"] },
    outage: { type: "noul" },
  },
});

function startServer() {
  const args = ["serve", "--demo", "--port", "0", "--threads", "1", ...argv];
  const child = spawn(clef, args, { stdio: ["ignore", "pipe", "pipe"] });
  child.stderr.resume();  // the access log: read and dropped
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.on("exit", (code) => reject(new Error(`clef serve exited ${code} before listening`)));
    setTimeout(() => reject(new Error("no banner within 120 s")), 120000);
  });
}

function request(options, payload) {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const req = http.request(options, (res) => {
      res.resume();
      res.on("end", () =>
        resolve({ status: res.statusCode, ms: Number(process.hrtime.bigint() - t0) / 1e6 }));
    });
    req.on("error", (e) => resolve({ status: `error:${e.code ?? e.message}`,
                                     ms: Number(process.hrtime.bigint() - t0) / 1e6 }));
    req.setTimeout(60000, () => req.destroy(new Error("timeout")));
    if (payload) req.end(payload); else req.end();
  });
}

async function waitHealthy(port) {
  for (let i = 0; i < 1200; ++i) {
    const r = await request({ host: "127.0.0.1", port, path: "/health", agent: false });
    if (r.status === 200) return;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  throw new Error("never healthy");
}

function summary(values) {
  if (values.length === 0) return { n: 0 };
  const s = [...values].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  const round = (x) => Math.round(x * 100) / 100;
  return { n: s.length, p50: round(at(0.5)), p99: round(at(0.99)), max: round(s[s.length - 1]),
           over100: s.filter((x) => x > 100).length };
}

const { child, port } = await startServer();
await waitHealthy(port);
const stopAt = Date.now() + duration;
const decisions = new Map();  // status -> [ms]
const probes = new Map();     // path -> [ms]
const probeStatus = new Map();
const add = (map, key, ms) => { if (!map.has(key)) map.set(key, []); map.get(key).push(ms); };

async function client() {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  while (Date.now() < stopAt) {
    const r = await request({ host: "127.0.0.1", port, path: "/v1/decisions", method: "POST",
                              agent, headers: { "Content-Type": "application/json" } }, body);
    add(decisions, String(r.status), r.ms);
    if (r.status !== 200) await new Promise((ok) => setTimeout(ok, retryMs));
  }
  agent.destroy();
}

async function prober() {
  const paths = ["/health", "/metrics", "/v1/models", "/openapi.json"];
  await new Promise((ok) => setTimeout(ok, 1000));  // let the flood fill the queue first
  while (Date.now() < stopAt) {
    const round = Date.now();
    await Promise.all(paths.map(async (p) => {
      const r = await request({ host: "127.0.0.1", port, path: p, agent: false });
      add(probes, p, r.ms);
      add(probeStatus, `${p} ${r.status}`, 0);
    }));
    await new Promise((ok) => setTimeout(ok, Math.max(0, 100 - (Date.now() - round))));
  }
}

await Promise.all([...Array.from({ length: clients }, client), prober()]);
child.kill("SIGTERM");
await new Promise((ok) => child.on("exit", ok));

const report = { clients, duration_s: duration / 1000, serve_args: argv, decisions: {}, probes: {},
                 probe_statuses: {} };
console.log(`clef serve ${argv.join(" ")}: ${clients} decision clients for ${duration / 1000} s`);
for (const [status, ms] of [...decisions].sort()) {
  report.decisions[status] = summary(ms);
  const s = report.decisions[status];
  console.log(`  decisions ${status}: ${s.n}, p50 ${s.p50} ms, p99 ${s.p99} ms, max ${s.max} ms`);
}
for (const [p, ms] of probes) {
  report.probes[p] = summary(ms);
  const s = report.probes[p];
  console.log(`  probe ${p}: ${s.n}, p50 ${s.p50} ms, p99 ${s.p99} ms, max ${s.max} ms, ` +
              `${s.over100} over 100 ms`);
}
for (const [k, v] of probeStatus) report.probe_statuses[k] = v.length;
console.log(`  probe statuses: ${JSON.stringify(report.probe_statuses)}`);
console.log("CLEF_OVERLOAD " + JSON.stringify(report));
