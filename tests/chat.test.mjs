// End to end: `npm run chat` (scripts/chat.mjs) against Hearth in workerd and
// the LLM stand-in, as a newcomer runs it after `npm run dev`: the token from
// .dev.vars, the answer streamed, /thread, /reset, Ctrl-C stops the wait only.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, beforeEach, describe, test } from "node:test";
import { startHearth } from "./support/hearth.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const TOKEN = "chat-test-admin-token";

let h;
let url;
let dir;
before(async () => {
  h = await startHearth({ bindings: { ADMIN_TOKEN: TOKEN } });
  url = String(await h.mf.ready).replace(/\/$/, "");
  // A project folder as `npm run dev` leaves it: .dev.vars with an ADMIN_TOKEN.
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "hearth-chat-"));
  fs.writeFileSync(path.join(dir, ".dev.vars"), `# local secrets\nLLM_API_KEY=x\nADMIN_TOKEN="${TOKEN}"\n`);
});
after(async () => {
  await h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => h.reset());

/** Runs the chat with `args`; returns its process and its output so far. */
function chat(args = []) {
  const child = spawn(process.execPath, [path.join(ROOT, "scripts/chat.mjs"), "--url", url, ...args], {
    cwd: dir,
    env: { ...process.env, HEARTH_TOKEN: "" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const out = { stdout: "", stderr: "" };
  child.stdout.on("data", (d) => (out.stdout += d));
  child.stderr.on("data", (d) => (out.stderr += d));
  const exited = new Promise((r) => child.on("exit", (code) => r(code)));
  return { child, out, exited };
}

const until = (pred, what) => h.until(pred, { what, timeoutMs: 20000 });

describe("npm run chat", () => {
  test("talks to the agent with the token of .dev.vars, streaming the answer, across threads", async () => {
    h.llm.push({ text: "Hello! I am your agent.", pieceDelayMs: 30 });
    const c = chat();
    c.child.stdin.write("hello\n");
    c.child.stdin.write("/thread work\n");
    c.child.stdin.write("second question\n");
    c.child.stdin.write("/reset\n");
    c.child.stdin.end();
    assert.equal(await c.exited, 0, c.out.stderr);
    assert.match(c.out.stdout, /Hello! I am your agent\./);
    assert.match(c.out.stdout, /echo: second question/);
    assert.match(c.out.stdout, /thread: main/);
    assert.match(c.out.stdout, /thread: work/);
    assert.match(c.out.stdout, /Fresh start/, "/reset went to the agent");
    // The two answers (the reset's memory extraction that follows is no answer).
    assert.ok(h.llm.requests.slice(0, 2).every((r) => r.body.stream === true), "the answers were streamed");
    const main = await h.sessionStatus("agent:main:main");
    assert.equal(main.messages[0].content.at(-1).text, "hello", "the default thread is the owner's main session");
    const work = await h.sessionStatus("agent:main:api:work");
    assert.equal(work.messageCount, 0, "reset: the conversation was archived");
  });

  test("Ctrl-C stops waiting, not the turn: the answer is in the thread", async () => {
    h.llm.push({ text: "a long and slow answer that keeps going for a while", pieceDelayMs: 80 });
    const c = chat(["--thread", "slow"]);
    c.child.stdin.write("take your time\n");
    await until(() => c.out.stdout.includes("a long"), "the first words");
    c.child.kill("SIGINT");
    await until(() => c.out.stdout.includes("stopped waiting"), "the wait stopped");
    c.child.stdin.end();
    assert.equal(await c.exited, 0);
    assert.ok(!c.out.stdout.includes("for a while"), "it stopped reading");
    await until(async () => (await h.sessionStatus("agent:main:api:slow")).messageCount === 2, "the turn completed");
    const s = await h.sessionStatus("agent:main:api:slow");
    assert.equal(s.messages[1].content[0].text, "a long and slow answer that keeps going for a while");
  });

  test("a wrong token or no Hearth is said plainly", async () => {
    const wrong = chat(["--token", "nope"]);
    wrong.child.stdin.end();
    assert.equal(await wrong.exited, 2);
    assert.match(wrong.out.stderr, /refused the token/);
    const gone = spawn(process.execPath, [path.join(ROOT, "scripts/chat.mjs"), "--url", "http://127.0.0.1:9"], { cwd: dir });
    let err = "";
    gone.stderr.on("data", (d) => (err += d));
    assert.equal(await new Promise((r) => gone.on("exit", r)), 2);
    assert.match(err, /Cannot reach Hearth .* npm run dev/);
  });
});
