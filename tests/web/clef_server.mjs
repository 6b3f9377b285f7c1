// Starts `clef serve --demo` for a web test: its own model cache, a free port read from its
// banner, and (with waitReady) the wait until /health says 200.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/// Returns {child, port (a promise), ready() (a promise of the base URL once healthy), stop()}.
export function startDemoServer(clef, args = [], stderr = "pipe") {
  const cache = mkdtempSync(path.join(tmpdir(), "clef-web-"));
  const child = spawn(clef, ["serve", "--demo", "--host", "127.0.0.1", "--port", "0", "--threads", "1", ...args],
                      { env: { ...process.env, XDG_CACHE_HOME: cache }, stdio: ["ignore", "pipe", stderr] });
  const port = new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const m = /127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.on("exit", (code) => reject(new Error("clef serve exited with " + code)));
  });
  const ready = async () => {
    const base = `http://127.0.0.1:${await port}`;
    for (let i = 0; i < 600 && (await fetch(base + "/health")).status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    return base;
  };
  const stop = () => {
    child.kill("SIGTERM");
    rmSync(cache, { recursive: true, force: true });
  };
  return { child, port, ready, stop };
}
