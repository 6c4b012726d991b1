// `npm run dev` takes wrangler dev's flags: `-- --port N --ip A` (and the
// `--port=N` form) decide where Hearth listens, over the PORT variable;
// `--persist-to DIR` is where the starter workspace is seeded and the state
// kept. A bad port is refused before anything is built or started.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** A port nothing listens on right now. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

describe("npm run dev -- --port / --ip", () => {
  // dev.sh makes a .dev.vars when there is none: a test run leaves none behind.
  const hadDevVars = fs.existsSync(path.join(ROOT, ".dev.vars"));
  const state = fs.mkdtempSync(path.join(os.tmpdir(), "hearth-dev-"));
  let child;
  after(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      process.kill(-child.pid, "SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10000))]);
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid, "SIGKILL");
    }
    if (!hadDevVars) fs.rmSync(path.join(ROOT, ".dev.vars"), { force: true });
    fs.rmSync(state, { recursive: true, force: true });
  });

  test("a port that is not a number is refused at once, naming the flag", () => {
    const r = spawnSync("bash", ["scripts/dev.sh", "--port", "eighty"], { cwd: ROOT, encoding: "utf8" });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--port \(or PORT\) must be a port number from 1 to 65535, not "eighty"/);
    const missing = spawnSync("bash", ["scripts/dev.sh", "--ip"], { cwd: ROOT, encoding: "utf8" });
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /--ip needs a value/);
  });

  test("Hearth listens on the --port given (the flag wins over PORT), seeded in --persist-to", { timeout: 240_000 }, async () => {
    const [port, envPort] = [await freePort(), await freePort()];
    let out = "";
    child = spawn("npm", ["run", "dev", "--", `--port=${port}`, "--ip", "127.0.0.1", "--persist-to", state], {
      cwd: ROOT,
      detached: true,
      env: { ...process.env, PORT: String(envPort) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const deadline = Date.now() + 200_000;
    let health;
    while (!health && Date.now() < deadline) {
      assert.equal(child.exitCode, null, `npm run dev stopped:\n${out}`);
      health = await fetch(`http://127.0.0.1:${port}/health`).then((r) => (r.ok ? r.json() : null), () => null);
      if (!health) await new Promise((r) => setTimeout(r, 500));
    }
    assert.ok(health, `nothing answered on port ${port}:\n${out.slice(-3000)}`);
    assert.equal(health.ok, true);
    assert.match(out, new RegExp(`Hearth runs at http://127\\.0\\.0\\.1:${port} `), "the banner names the port in use");
    assert.match(out, new RegExp(`npm run chat -- --url http://127\\.0\\.0\\.1:${port}`), "and how to chat with it there");
    const onEnvPort = await fetch(`http://127.0.0.1:${envPort}/health`).then(() => true, () => false);
    assert.equal(onEnvPort, false, "PORT is overridden by --port");
    // The starter workspace went to the state folder given.
    assert.ok(fs.readdirSync(state).length > 0, "state kept in --persist-to");
    // With no owner yet, the one-time claim code follows once Hearth answers.
    const claimBy = Date.now() + 30_000;
    while (!/Claim this agent: send {2}\/claim [A-HJ-NP-Z2-9]{8}/.test(out) && Date.now() < claimBy) await new Promise((r) => setTimeout(r, 250));
    assert.match(out, /Claim this agent: send {2}\/claim [A-HJ-NP-Z2-9]{8}/, "the banner shows the claim code");
  });
});
