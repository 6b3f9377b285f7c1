// TypeSafe's JS SDK (@typesafe-ai/sdk, pinned in package.json) against a real `clef serve --demo`,
// pointed at it by TYPESAFE_BASE_URL as a SystemOne user would: every public method of its
// decisions and models surface, which error class each clef refusal becomes, request ids, retries
// on a full queue after retry-after-ms, its timeout and its abort (the server stops the decision
// and logs 499).
// usage: node typesafe_sdk.mjs CLEF_BINARY   (77: the SDK is not installed)
import { deflateSync, crc32 } from "node:zlib";
import { startDemoServer } from "./clef_server.mjs";

let sdk;
try {
  sdk = await import("@typesafe-ai/sdk");
} catch (e) {
  console.error("SKIP: @typesafe-ai/sdk is not installed (scripts/setup installs it): " + e.message);
  process.exit(77);
}
const { TypeSafeClient, noul, choice, score } = sdk;
const [clef] = process.argv.slice(2);

let failures = 0;
let checks = 0;
function expect(ok, message) {
  checks++;
  if (!ok) {
    failures++;
    console.error("FAIL: " + message);
  }
}
/// The error `promise` rejects with (undefined when it resolves).
async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  return undefined;
}

/// A w x h RGB PNG as a data URI (what a user's image upload looks like).
function pngDataUri(w, h) {
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body) >>> 0);
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8;  // bit depth
  ihdr[9] = 2;  // RGB
  const rows = [];
  for (let y = 0; y < h; y++) {
    const row = Buffer.alloc(1 + 3 * w);
    for (let x = 0; x < w; x++) row.set([x * 7 % 256, y * 5 % 256, (x + y) % 256], 1 + 3 * x);
    rows.push(row);
  }
  const png = Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk("IHDR", ihdr),
                             chunk("IDAT", deflateSync(Buffer.concat(rows))), chunk("IEND", Buffer.alloc(0))]);
  return "data:image/png;base64," + png.toString("base64");
}

/// A client as a user makes it: base URL and key from the environment.
function client(base, options = {}) {
  process.env.TYPESAFE_BASE_URL = base;
  process.env.TYPESAFE_API_KEY = "sk-clef-local";
  process.env.TYPESAFE_LOG_LEVEL = "off";
  return new TypeSafeClient(options);
}

/// Runs `body` against a fresh demo server started with `args`; its stderr (the access log) is
/// collected into log.text.
async function withServer(args, body) {
  // No state cache unless asked for: each decision is then a full prefill (timings hold).
  const cache = args.includes("--state-cache-mb") ? [] : ["--state-cache-mb", "0"];
  const server = startDemoServer(clef, [...cache, ...args]);
  const log = { text: "" };
  server.child.stderr.on("data", (d) => (log.text += d));
  try {
    const base = await server.ready();
    await body(base, log);
  } finally {
    server.stop();
  }
}

const longState = "w ".repeat(16000);  // 16,000 tokens: on the demo model ~0.5 s at 4,096, ~5 s at 16,384

await withServer(["--context-size", "4096"], async (base, log) => {
  const ts = client(base);

  // models.list(): clef's model as the SDK reads it.
  const models = await ts.models.list();
  expect(Array.isArray(models) && models.length === 1, "models.list() is one model: " + JSON.stringify(models));
  expect(typeof models[0]?.name === "string" && models[0].name.length > 0, "the model has a name");
  expect(typeof models[0]?.description === "string" && typeof models[0]?.release_date === "string",
         "the model has description and release_date: " + JSON.stringify(models[0]));
  const { data: listed, requestId: listId, response: listResponse } = await ts.models.list().withResponse();
  expect(listed.length === 1 && listId && listId === listResponse.headers.get("x-request-id"),
         "models.list().withResponse() gives the request id");

  // systemOne: all three types, several questions, a null score level, JSON state, extra fields,
  // and a data-URI image.
  const questions = {
    outage: noul("Is a service down?"),
    department: choice("Which team?", { billing: "Payments", technical: null, other: { k: 1 } }),
    urgency: score("How urgent?", [null, "This week", "Today"]),
  };
  const request = { state: { ticket: "Checkout returns errors; orders are blocked." }, questions,
                    temperature: 0, metadata: { user: "u1" }, seed: 7 };
  const { data: answer, requestId, response } = await ts.systemOne(request).withResponse();
  expect(requestId && requestId === response.headers.get("x-request-id"),
         `requestId ${requestId} is the X-Request-Id ${response.headers.get("x-request-id")}`);
  // The SDK sends its defaultModel ("jev-latest" unless TYPESAFE_DEFAULT_MODEL says otherwise);
  // clef answers with the served model whatever the name, and echoes the name asked for.
  expect(answer.model === ts.defaultModel, `answer.model ${answer.model} echoes the SDK's ${ts.defaultModel}`);
  expect(typeof answer.answers.outage.noul === "number", "noul answer: " + JSON.stringify(answer.answers.outage));
  expect(["billing", "technical", "other"].includes(answer.answers.department.choice),
         "choice answer: " + JSON.stringify(answer.answers.department));
  const urgency = answer.answers.urgency;
  // The reference's legend: criteria[i] as given, a null level as null (contract section 6; the
  // SDK types it T[score], so null is expected).
  expect(JSON.stringify(urgency.legend) === JSON.stringify({ 0: null, 1: "This week", 2: "Today" }),
         "score legend keeps the null level: " + JSON.stringify(urgency.legend));
  expect(Object.keys(urgency.probabilities).join() === "0,1,2", "score probabilities keyed 0..2");
  expect(answer.usage.output_tokens === 0 && answer.usage.input_tokens > 0, "usage: " + JSON.stringify(answer.usage));
  // The same request again (await directly, the SDK's plain form) is the same answer.
  const again = await ts.systemOne(request);
  expect(JSON.stringify(again) === JSON.stringify(answer), "a repeated decision is the same answer");
  // A string state, a question without instructions, a model override and .map().
  const mapped = await ts.systemOne({ state: "hello", questions: { q: noul() }, model: models[0].name })
                         .map((r) => [r.model, r.answers.q.noul]);
  expect(mapped[0] === models[0].name && typeof mapped[1] === "number",
         "systemOne().map() with a model override: " + mapped);
  const raw = await ts.systemOne({ state: "hello", questions: { q: noul() } }).asResponse();
  expect(raw.status === 200 && raw.headers.get("x-typesafe-request-id"), "asResponse() is the HTTP response");
  await raw.text();
  const pictured = await ts.systemOne({ state: "What is shown?", questions: { q: noul("Is it a chart?") },
                                         images: [pngDataUri(64, 48)] });
  expect(pictured.usage.input_tokens > answer.usage.input_tokens - 200 && typeof pictured.answers.q.noul === "number",
         "a data-URI image is decided: " + JSON.stringify(pictured));

  // Refusals: each becomes the SDK's class for its status, with clef's message and request id.
  const bad = await rejection(ts.systemOne({ state: "x", questions: { q: { type: "nope" } } }));
  expect(bad instanceof sdk.BadRequestError && bad.status === 400, "a bad question type is BadRequestError: " + bad);
  expect(bad?.message.includes("questions.q.type"), "its message names the field: " + bad?.message);
  expect(bad?.requestId && bad.requestId === bad.headers.get("x-request-id"), "its requestId is the X-Request-Id");
  expect(bad?.body?.detail === bad?.body?.error?.message, "detail repeats the message: " + JSON.stringify(bad?.body));
  const many = {};
  for (let i = 0; i < 65; i++) many["q" + i] = noul();
  const large = await rejection(ts.systemOne({ state: "x", questions: many }));
  expect(large instanceof sdk.APIError && large.status === 413 && large.message.includes("questions"),
         "65 questions is a 413 APIError naming questions: " + large);
  const url = await rejection(ts.systemOne({ state: "x", questions: { q: noul() }, images: ["https://example.com/a.png"] }));
  expect(url instanceof sdk.UnprocessableEntityError && url.status === 422,
         "an image URL on a server that fetches none is 422 UnprocessableEntityError: " + url);
  const missing = await rejection(ts.systemOne({ questions: { q: noul() } }));
  expect(missing instanceof sdk.BadRequestError && missing.message.includes("state"), "a missing state is 400 naming it: " + missing);
  const wrongPath = await rejection(client(base + "/nowhere").models.list());
  expect(wrongPath instanceof sdk.NotFoundError && wrongPath.status === 404, "an unknown path is NotFoundError: " + wrongPath);
  const tooLong = await rejection(ts.systemOne({ state: "x", questions: { q: noul() }, max_length: 0 }));
  expect(tooLong instanceof sdk.BadRequestError && tooLong.message.includes("max_length"), "max_length 0 is refused by name: " + tooLong);
  const capped = await ts.systemOne({ state: longState, questions: { q: noul() }, max_length: 300 });
  expect(capped.usage.input_tokens === 300, "max_length is honoured: " + capped.usage.input_tokens);

  // Timeout: a decision longer than the client's timeout (no retries) is APITimeoutError, and the
  // server stops it (499 in its access log).
  const before = (log.text.match(/status=499/g) || []).length;
  const slow = client(base, { timeout: 150, retry: { maxRetries: 0 } });
  const timedOut = await rejection(slow.systemOne({ state: longState, questions: { q: noul() } }));
  expect(timedOut instanceof sdk.APITimeoutError, "a decision over the timeout is APITimeoutError: " + timedOut);
  // Abort: the caller's AbortSignal is APIUserAbortError, and the server stops that one too.
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 150);
  const aborted = await rejection(ts.systemOne({ state: longState + "b", questions: { q: noul() } },
                                               { signal: controller.signal }));
  expect(aborted instanceof sdk.APIUserAbortError, "an aborted call is APIUserAbortError: " + aborted);
  let stopped = 0;
  for (let i = 0; i < 100 && stopped < 2; i++) {
    stopped = (log.text.match(/status=499/g) || []).length - before;
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(stopped === 2, `the server logged both gone clients as 499 (${stopped})`);
});

// A decision longer than the SDK's timeout: each timed-out attempt leaves its progress in the
// state cache (progress snapshots every 100 ms here), so the retries resume rather than restart
// and the call succeeds within its retries.
await withServer(["--context-size", "16384", "--state-cache-mb", "1024", "--set", "resume_snapshot_ms=100"],
                 async (base, log) => {
  let sent = 0;
  const counting = (input, init) => {
    sent++;
    return fetch(input, init);
  };
  const ts = client(base, { timeout: 1500, fetch: counting, retry: { maxRetries: 8, backoffInitialMs: 10, backoffMaxMs: 10 } });
  const started = Date.now();
  const answer = await ts.systemOne({ state: longState + "retried", questions: { q: noul() } });
  console.log(`a ~5 s decision under a 1.5 s client timeout: answered after ${sent} attempts in ${Date.now() - started} ms`);
  expect(typeof answer.answers.q.noul === "number" && sent > 1,
         `a decision over the client's timeout succeeds on a retry (${sent} attempts, ${Date.now() - started} ms)`);
  const cached = [...log.text.matchAll(/cached_tokens=(\d+)/g)].map((m) => Number(m[1]));
  expect(cached.length > 0 && cached[cached.length - 1] > 100,
         "the answered attempt resumed from the abandoned ones' progress: cached_tokens " + cached.join());
});

// --validation-status 422: the hosted API's status, the SDK's UnprocessableEntityError.
await withServer(["--validation-status", "422"], async (base) => {
  const ts = client(base);
  const e = await rejection(ts.systemOne({ state: "x", questions: { q: { type: "nope" } } }));
  expect(e instanceof sdk.UnprocessableEntityError && e.status === 422 && e.message.includes("questions.q.type"),
         "with --validation-status 422 a bad field is UnprocessableEntityError: " + e);
});

// A full queue: the SDK retries each 429 after the server's retry-after-ms (the recent decisions'
// pace), not after Retry-After's whole second nor its own 500 ms backoff, and every call is
// answered as it would be alone.
await withServer(["--queue-size", "1", "--context-size", "4096"], async (base) => {
  const attempts = [];
  const recording = async (input, init) => {
    const sent = Date.now();
    const res = await fetch(input, init);
    attempts.push({ sent, status: res.status, retryAfterMs: res.headers.get("retry-after-ms"),
                    retryCount: new Headers(init.headers).get("X-TypeSafe-Retry-Count") });
    return res;
  };
  const ts = client(base, { fetch: recording, retry: { maxRetries: 200 }, timeout: 60000 });
  const short = { state: "short", questions: { q: noul("Is it short?") } };
  const alone = await ts.systemOne(short);  // also gives the queue its first decision times
  await ts.systemOne(short);
  const running = ts.systemOne({ state: longState, questions: { q: noul() } });
  await new Promise((r) => setTimeout(r, 100));
  const calls = [];
  for (let i = 0; i < 4; i++) calls.push(ts.systemOne(short));
  const answers = await Promise.all([running, ...calls]);
  expect(answers.slice(1).every((a) => JSON.stringify(a) === JSON.stringify(alone)),
         "every retried call is answered as alone");
  const refused = attempts.filter((a) => a.status === 429);
  expect(refused.length > 0, "the queue was full at least once (" + attempts.length + " attempts)");
  expect(refused.every((a) => a.retryAfterMs !== null && Number(a.retryAfterMs) < 1000),
         "each 429 says retry-after-ms under a second: " + refused.map((a) => a.retryAfterMs).join());
  expect(attempts.some((a) => a.retryCount !== null), "the SDK marked its retries (X-TypeSafe-Retry-Count)");
});

console.log(`TypeSafe JS SDK ${sdk.VERSION} against clef: ${checks} checks, ${failures} failures`);
process.exit(failures === 0 ? 0 : 1);
