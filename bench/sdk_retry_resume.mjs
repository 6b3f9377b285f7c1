// A decision longer than TypeSafe's JS SDK's per-attempt timeout, with the SDK's default retries
// (2, its own backoff), against `clef serve` with and without resume snapshots (issue 30 item 6):
// the SDK's 10 s timeout and a 20 s decision, scaled down to TIMEOUT_MS and a decision of about
// twice that. Prints, per setting, whether the call succeeded, its attempts and its wall time.
// usage (from tests/web, where the SDK is installed):
//   node ../../bench/sdk_retry_resume.mjs CLEF_BINARY MODEL_DIR CONTEXT TIMEOUT_MS [THREADS]
import { spawn } from "node:child_process";
import { createRequire } from "node:module";

// The SDK as installed where this runs (tests/web/node_modules), not beside this file.
const { TypeSafeClient, noul } = await import(createRequire(process.cwd() + "/").resolve("@typesafe-ai/sdk"));

const [clef, modelDir, context, timeoutMs, threads = "1"] = process.argv.slice(2);
const state = "w ".repeat(Number(context));

async function run(resumeMs) {
  const child = spawn(clef, ["serve", "--model-dir", modelDir, "--host", "127.0.0.1", "--port", "0",
                             "--threads", threads, "--context-size", context, "--state-cache-mb", "2048",
                             "--set", `resume_snapshot_ms=${resumeMs}`], { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stderr.on("data", (d) => (log += d));
  const port = await new Promise((resolve) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const m = /127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(m[1]);
    });
  });
  const base = `http://127.0.0.1:${port}`;
  while ((await fetch(base + "/health").catch(() => ({ status: 0 }))).status !== 200) {
    await new Promise((r) => setTimeout(r, 100));
  }
  // One decision alone first: how long the record takes without any client timeout.
  const t0 = Date.now();
  await new TypeSafeClient({ baseURL: base, apiKey: "x", logLevel: "off", timeout: 600000 })
    .systemOne({ state: state.replaceAll("w", "u"), questions: { q: noul() } });  // shares no state
  const alone = Date.now() - t0;
  let attempts = 0;
  const ts = new TypeSafeClient({ baseURL: base, apiKey: "x", logLevel: "off", timeout: Number(timeoutMs),
                                  fetch: (input, init) => (attempts++, fetch(input, init)) });
  const started = Date.now();
  let outcome = "answered";
  try {
    await ts.systemOne({ state, questions: { q: noul() } });
  } catch (e) {
    outcome = e.constructor.name;
  }
  const wall = Date.now() - started;
  child.kill("SIGTERM");
  const gone = (log.match(/status=499/g) || []).length;
  console.log(`resume_snapshot_ms=${resumeMs}: the record alone ${alone} ms; under a ${timeoutMs} ms timeout: ` +
              `${outcome} after ${attempts} attempts, ${wall} ms (${gone} abandoned, 499)`);
}

await run(0);
await run(Math.round(Number(timeoutMs) / 5));
await run(2000);
