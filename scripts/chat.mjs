#!/usr/bin/env node
// `npm run chat`: talk to your agent from a terminal, over Hearth's HTTP API
// (POST /api/agents/{id}/stream). The answer is printed as the model writes it.
//
//   npm run chat                          # the local agent (npm run dev), token from .dev.vars
//   npm run chat -- --url https://hearth.example.workers.dev --token $ADMIN_TOKEN
//   npm run chat -- --agent work --thread notes
//
// In the chat: /reset starts a fresh conversation (the old one is archived),
// /thread NAME switches thread (main: your main session, the same one as your
// Telegram DMs), /quit or Ctrl-D leaves. Ctrl-C while the agent is answering
// stops waiting; the agent still finishes and the answer stays in the thread.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function parseArgs(argv) {
  const out = { url: process.env.HEARTH_URL || "http://127.0.0.1:8787", agent: "main", thread: "main" };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split("=", 2);
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case "--url":
        out.url = value();
        break;
      case "--token":
        out.token = value();
        break;
      case "--agent":
        out.agent = value();
        break;
      case "--thread":
        out.thread = value();
        break;
      case "-h":
      case "--help":
        out.help = true;
        break;
      default:
        console.error(`unknown option ${argv[i]} (see --help)`);
        process.exit(2);
    }
  }
  return out;
}

/** KEY=value lines of a .dev.vars file (comments and blanks skipped). */
export function readDevVars(file) {
  const vars = {};
  let text;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
  for (const line of text.split(/\r?\n/)) {
    const m = line.match(/^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/);
    if (!m) continue;
    vars[m[1]] = m[2].replace(/^(["'])(.*)\1$/, "$2");
  }
  return vars;
}

function findToken() {
  if (process.env.HEARTH_TOKEN) return { token: process.env.HEARTH_TOKEN, from: "HEARTH_TOKEN" };
  for (const dir of [process.cwd(), ROOT]) {
    const vars = readDevVars(path.join(dir, ".dev.vars"));
    if (vars?.ADMIN_TOKEN) return { token: vars.ADMIN_TOKEN, from: path.join(dir, ".dev.vars") };
  }
  return null;
}

const HELP = `npm run chat [-- --url URL] [--token TOKEN] [--agent ID] [--thread NAME]

  --url     where Hearth runs (default http://127.0.0.1:8787, npm run dev)
  --token   ADMIN_TOKEN or an API_TOKENS token (default: HEARTH_TOKEN, else
            ADMIN_TOKEN from .dev.vars)
  --agent   the agent (default main)
  --thread  the thread (default main: your main session; a key that is not
            the owner's gets a thread of its own)

In the chat: /reset, /thread NAME, /quit. Ctrl-C stops waiting for an answer.`;

const dim = (s) => (process.stdout.isTTY ? `\x1b[2m${s}\x1b[0m` : s);

/** Reads the server-sent events of `res`, calling `on(event)` for each. */
async function readEvents(res, on, signal) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  const abort = () => reader.cancel().catch(() => {});
  signal?.addEventListener("abort", abort, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const ev = { event: "message", id: null, data: [] };
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) ev.event = line.slice(7);
          else if (line.startsWith("id: ")) ev.id = line.slice(4);
          else if (line.startsWith("data: ")) ev.data.push(line.slice(6));
        }
        if (!ev.data.length) continue;
        try {
          ev.json = JSON.parse(ev.data.join("\n"));
        } catch {
          continue;
        }
        on(ev);
      }
    }
  } finally {
    signal?.removeEventListener("abort", abort);
  }
}

export async function main(argv = process.argv.slice(2)) {
  const opts = parseArgs(argv);
  if (opts.help) {
    console.log(HELP);
    return 0;
  }
  if (!opts.token) {
    const found = findToken();
    if (!found) {
      console.error("No token: set ADMIN_TOKEN in .dev.vars (npm run dev makes one), or pass --token.");
      return 2;
    }
    opts.token = found.token;
  }
  const base = opts.url.replace(/\/+$/, "");
  let thread = opts.thread;
  let waiting = null; // AbortController of the answer being read
  let closed = false;

  // Reachable, and the token works?
  try {
    const r = await fetch(`${base}/api/agents`, { headers: { authorization: `Bearer ${opts.token}` } });
    if (r.status === 401 || r.status === 503) {
      console.error(`${base} refused the token: ${(await r.json().catch(() => ({}))).error ?? r.status}`);
      return 2;
    }
  } catch (e) {
    console.error(`Cannot reach Hearth at ${base} (${e.cause?.code ?? e.message}). Is npm run dev running?`);
    return 2;
  }
  console.log(dim(`Hearth at ${base}, agent ${opts.agent}, thread ${thread}. /reset, /thread NAME, /quit; Ctrl-C stops waiting.`));

  /** Sends one message and prints the answer as it comes. */
  async function say(text) {
    const key = crypto.randomUUID();
    const controller = new AbortController();
    waiting = controller;
    let lastId = null;
    let printed = "";
    let ended = false;
    for (let attempt = 0; attempt < 4 && !ended; attempt++) {
      let res;
      try {
        res = await fetch(`${base}/api/agents/${opts.agent}/stream`, {
          method: "POST",
          signal: controller.signal,
          headers: {
            authorization: `Bearer ${opts.token}`,
            "content-type": "application/json",
            "idempotency-key": key,
            ...(lastId ? { "last-event-id": lastId } : {}),
          },
          body: JSON.stringify({ messages: [{ role: "user", content: text }], threadId: thread }),
        });
      } catch (e) {
        if (controller.signal.aborted) break;
        console.error(dim(`\n(connection failed: ${e.cause?.code ?? e.message}; trying again)`));
        await new Promise((r) => setTimeout(r, 500 * (attempt + 1)));
        continue;
      }
      if (res.status === 403 && thread === "main" && attempt === 0) {
        thread = "cli";
        console.log(dim("(this token is not the owner's: it cannot use main; chatting in thread cli)"));
        attempt--;
        continue;
      }
      if (!res.ok) {
        const body = await res.json().catch(() => ({}));
        console.error(`⚠️ ${res.status}: ${body.error ?? body.message ?? res.statusText}`);
        break;
      }
      try {
        await readEvents(
          res,
          (ev) => {
            if (ev.id) lastId = ev.id;
            if (ev.event === "delta") {
              if (ev.json.replace) {
                process.stdout.write(dim("\n↻ ") + ev.json.text);
                printed = ev.json.text;
              } else {
                process.stdout.write(ev.json.text);
                printed += ev.json.text;
              }
            } else if (ev.event === "tool") {
              if (ev.json.status === "running") process.stdout.write(dim(`${printed && !printed.endsWith("\n") ? "\n" : ""}[${ev.json.name}…]\n`));
              printed = "";
            } else if (ev.event === "done") {
              // The whole answer, when the deltas did not carry it (a reply
              // that was not written by the model: /reset, a repeat).
              if (!printed.trim() && ev.json.text) process.stdout.write(ev.json.text);
              const u = ev.json.usage ?? {};
              process.stdout.write(
                "\n" + dim(`[tokens: ${u.promptTokens ?? 0} prompt (${u.cacheReadTokens ?? 0} cached) + ${u.completionTokens ?? 0} completion | thread: ${ev.json.threadId}]`) + "\n",
              );
              ended = true;
            } else if (ev.event === "error") {
              process.stdout.write(`\n⚠️ ${ev.json.message}\n`);
              ended = true;
            }
          },
          controller.signal,
        );
      } catch (e) {
        if (controller.signal.aborted) break;
      }
      if (!ended && !controller.signal.aborted) console.error(dim("\n(the answer stream broke off; reconnecting)"));
      if (controller.signal.aborted) break;
    }
    if (controller.signal.aborted) {
      process.stdout.write(dim("\n(stopped waiting: the agent finishes in the background, and its answer stays in the thread)\n"));
    }
    waiting = null;
  }

  const rl = readline.createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
  // Ctrl-C: stop waiting for the answer (the turn goes on), or leave.
  const interrupt = () => {
    if (waiting) waiting.abort();
    else {
      closed = true;
      rl.close();
      process.exit(0);
    }
  };
  rl.on("SIGINT", interrupt); // a terminal
  process.on("SIGINT", interrupt); // piped input
  rl.setPrompt("you> ");
  const prompt = () => {
    if (process.stdin.isTTY && !closed) rl.prompt();
  };
  prompt();
  for await (const raw of rl) {
    const line = raw.trim();
    if (!line) {
      prompt();
      continue;
    }
    if (line === "/quit" || line === "/exit") break;
    if (line === "/help") {
      console.log(HELP);
    } else if (line.startsWith("/thread")) {
      const name = line.slice(7).trim();
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) console.log("usage: /thread NAME (1-64 of A-Z a-z 0-9 - _)");
      else {
        thread = name;
        console.log(dim(`(thread ${thread})`));
      }
    } else {
      // /reset (and /new) go to the agent, which archives the conversation.
      await say(line);
    }
    prompt();
  }
  rl.close();
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then((code) => process.exit(code ?? 0));
}
