// The playground in a real browser: Debian's headless Chromium (driven through the DevTools
// protocol by puppeteer-core, pinned in package.json) loads GET / from a running
// `clef serve --demo`, sends the card example, and the probabilities it renders equal the API's
// answer to the same request; an error is shown with its field. Screenshots at desktop and phone
// widths are written to ARTIFACTS.
// usage: node playground.mjs CLEF_BINARY ARTIFACTS_DIR   (77: no puppeteer-core or no Chromium)
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { startDemoServer } from "./clef_server.mjs";

let puppeteer;
try {
  puppeteer = (await import("puppeteer-core")).default;
} catch (e) {
  console.error("SKIP: puppeteer-core is not installed (scripts/setup installs it): " + e.message);
  process.exit(77);
}
const browserPath = ["/usr/bin/chromium", "/usr/bin/chromium-browser", process.env.CLEF_CHROMIUM]
  .find((p) => p && existsSync(p));
if (!browserPath) {
  console.error("SKIP: no Chromium (scripts/setup installs Debian's chromium)");
  process.exit(77);
}
const [clef, artifacts] = process.argv.slice(2);
mkdirSync(artifacts, { recursive: true });

const server = startDemoServer(clef, [], "inherit");
let browser;
let failures = 0;
const fail = (m) => { failures++; console.error("FAIL: " + m); };
try {
  const base = await server.ready();
  try {
    browser = await puppeteer.launch({ executablePath: browserPath, headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  } catch (e) {
    console.error("SKIP: Chromium cannot start here: " + e.message);
    process.exit(77);
  }
  const page = await browser.newPage();
  const consoleErrors = [];
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
  page.on("pageerror", (e) => consoleErrors.push(e.message));
  await page.setViewport({ width: 1280, height: 900 });
  await page.goto(base + "/", { waitUntil: "networkidle0" });

  // Send the example the page loads, and wait for the rendered answers.
  const requestSent = page.waitForRequest((r) => r.url().endsWith("/v1/decisions") && r.method() === "POST");
  await page.click("#send");
  const sentBody = (await requestSent).postData();
  await page.waitForSelector('[data-testid="question-department"] .bar');
  const rendered = await page.$$eval("[data-testid^=question-]", (cards) => cards.map((c) => ({
    id: c.dataset.testid.slice("question-".length),
    bars: [...c.querySelectorAll(".bar")].map((b) => ({ option: b.dataset.option, p: Number(b.dataset.prob),
                                                        text: b.querySelector(".value").textContent,
                                                        chosen: b.classList.contains("chosen") })),
  })));
  // The API's answer to the same request bytes.
  const api = await (await fetch(base + "/v1/decisions", { method: "POST", headers: { "Content-Type": "application/json" }, body: sentBody })).json();
  const ids = Object.keys(api.answers);
  if (JSON.stringify(rendered.map((r) => r.id)) !== JSON.stringify(ids)) fail(`questions ${rendered.map((r) => r.id)} vs ${ids}`);
  for (const card of rendered) {
    const a = api.answers[card.id];
    if (!a) continue;
    if (a.type === "noul") {
      const t = card.bars.find((b) => b.option === "true");
      if (!t || t.p !== a.noul || t.text !== a.noul.toFixed(4)) fail(`${card.id}: rendered ${JSON.stringify(t)} vs noul ${a.noul}`);
      continue;
    }
    for (const [option, p] of Object.entries(a.probabilities)) {
      const b = card.bars.find((x) => x.option === option);
      if (!b || b.p !== p || b.text !== p.toFixed(4)) fail(`${card.id}.${option}: rendered ${JSON.stringify(b)} vs ${p}`);
    }
    if (a.type === "choice" && !card.bars.find((b) => b.option === a.choice)?.chosen) fail(`${card.id}: ${a.choice} not highlighted`);
  }
  const tokens = await page.$eval("#status", (s) => s.dataset.tokens);
  if (Number(tokens) !== api.usage.input_tokens) fail(`token count ${tokens} vs ${api.usage.input_tokens}`);
  const raw = await page.$eval("#raw", (r) => r.textContent);
  if (JSON.stringify(JSON.parse(raw)) !== JSON.stringify(api)) fail("the raw JSON shown is not the API's answer");
  const curl = await page.$eval("#curl", (c) => c.textContent);
  if (!curl.startsWith("curl -s ") || !curl.includes("/v1/decisions")) fail("no curl command: " + curl);
  await page.screenshot({ path: path.join(artifacts, "playground-desktop.png"), fullPage: true });

  // Phone width, keyboard only: Ctrl+Enter sends; a bad question shows the error with its field.
  await page.setViewport({ width: 390, height: 844, isMobile: true });
  await page.evaluate(() => {
    const q = document.querySelector("fieldset.question [name=type]");
    q.value = "choice";
    q.dispatchEvent(new Event("change"));
    document.querySelector("fieldset.question [name=criteria]").value = "";
  });
  await page.focus("#state");
  await page.keyboard.down("Control");
  await page.keyboard.press("Enter");
  await page.keyboard.up("Control");
  await page.waitForSelector("#error:not([hidden])");
  const error = await page.$eval("#error", (e) => e.textContent);
  if (!error.includes("400") || !error.includes("questions.department.criteria")) fail("error shown: " + error);
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  if (width > 390) fail(`the page is ${width} px wide on a 390 px phone`);
  await page.screenshot({ path: path.join(artifacts, "playground-phone.png"), fullPage: true });
  // The 400 above is the one the test asked for; anything else is a fault of the page.
  const unexpected = consoleErrors.filter((e) => !e.includes("status of 400"));
  if (unexpected.length > 0) fail("console errors: " + unexpected.join("; "));

  // A server with API keys: the page asks for the key, sends it as Bearer, and then decides.
  const keyed = startDemoServer(clef, ["--api-key", "sk-playground-test"], "inherit");
  try {
    const keyedBase = await keyed.ready();
    const keyPage = await browser.newPage();
    await keyPage.goto(keyedBase + "/", { waitUntil: "networkidle0" });
    await keyPage.waitForSelector("#key-box:not([hidden])");
    const asked = await keyPage.$eval("#model", (m) => m.textContent);
    if (!asked.includes("API key")) fail("a keyed server's page says: " + asked);
    await keyPage.type("#api-key", "sk-playground-test");
    await keyPage.$eval("#api-key", (i) => i.dispatchEvent(new Event("change")));
    await keyPage.waitForFunction(() => document.querySelector("#model").textContent.startsWith("model "));
    const keyedSent = keyPage.waitForRequest((r) => r.url().endsWith("/v1/decisions") && r.method() === "POST");
    await keyPage.click("#send");
    const auth = (await keyedSent).headers()["authorization"];
    if (auth !== "Bearer sk-playground-test") fail("the page sent Authorization: " + auth);
    await keyPage.waitForSelector('[data-testid="question-department"] .bar');
    const keyedCurl = await keyPage.$eval("#curl", (c) => c.textContent);
    if (keyedCurl.includes("sk-playground-test") || !keyedCurl.includes("$CLEF_API_KEY")) fail("curl with a key: " + keyedCurl);
    await keyPage.screenshot({ path: path.join(artifacts, "playground-api-key.png"), fullPage: true });
  } finally {
    keyed.stop();
  }
  console.log(`playground: ${rendered.length} questions rendered equal to the API; a keyed server asked for its key and answered; screenshots in ${artifacts}; ${failures} failures`);
} finally {
  if (browser) await browser.close();
  server.stop();
}
process.exit(failures === 0 ? 0 : 1);
