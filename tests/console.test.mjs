// The web console in a real browser: Debian's chromium driven by
// puppeteer-core against the built Worker (and its static assets) in
// workerd, on a laptop (1366×900) and a phone (390×844, touch). What a
// person would notice: the login page without the menu, answers rendered
// as markdown (and nothing the model writes runs), code with its language
// and Copy, tables scrolling in their bubble, "Thinking…", Stop, failures
// and stops still there after a reload, chats titled by their first
// message, the workspace's truthful badges, unsaved edits guarded, a file's
// history with diffs and restore, delete with undo, sessions by person,
// the schedule in the agent's time, usage "as of" with Refresh, the memory
// page's fixes, dark mode, loading states. axe-core finds no serious or
// critical violation on any page at either size, no page scrolls sideways
// on the phone, and the console works from the keyboard alone.
// Screenshots go to .artifacts/console/ (README's come from there), with
// the figures measured (.artifacts/console/figures.json).
// Without a browser the tests skip and say why.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import zlib from "node:zlib";
import { FRIEND, startHearth, tgUpdate } from "./support/hearth.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ARTIFACTS = path.join(ROOT, ".artifacts/console");
const ADMIN = "browser-admin-token-42";
const TZ = "Europe/Paris";
const PRICE = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const costOf = (u) => (u.input * PRICE.input + u.output * PRICE.output + u.cacheRead * PRICE.cacheRead + u.cacheWrite * PRICE.cacheWrite) / 1e6;
const LAPTOP = { width: 1366, height: 900 };
const PHONE = { width: 390, height: 844, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const PAGES = ["chat", "workspace", "sessions", "memory", "usage", "schedule", "people", "tasks"];

const CANDIDATES = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].filter(Boolean);
const browserPath = CANDIDATES.find((p) => fs.existsSync(p));
const SKIP = browserPath
  ? false
  : `no Chromium found (looked at ${CANDIDATES.join(", ")}): install it with \`apt-get install -y chromium\` (or set CHROMIUM_PATH) to run the console's browser tests`;
if (SKIP) console.log(`# console browser tests skipped: ${SKIP}`);

const AXE = fs.readFileSync(path.join(ROOT, "node_modules/axe-core/axe.min.js"), "utf8");

let h;
let browser;
let page;
let phone;
const cspErrors = [];
const pageErrors = [];
const figures = { axeSeriousOrCritical: {}, sidewaysScrollAt390: {} };
let step = "start";
/** What the next confirm() answers (true: OK), and what it asked. */
const dialogs = { answer: true, asked: [] };

function watch(p, name) {
  p.on("console", (m) => {
    if (/Content.Security.Policy/i.test(m.text())) cspErrors.push(`${name} ${step}: ${m.text()}`);
  });
  p.on("pageerror", (e) => pageErrors.push(`${name} ${step}: ${e.message}`));
  p.on("dialog", (d) => {
    dialogs.asked.push(d.message());
    return dialogs.answer ? d.accept() : d.dismiss();
  });
}

async function shot(p, name) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  // No toast from an earlier step in a picture.
  await p.evaluate(() => (document.getElementById("status").textContent = ""));
  await p.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) });
}

/** axe-core in the page (evaluated through DevTools, so the page's CSP stays on). */
async function axe(p, what) {
  step = `axe ${what}`;
  await p.evaluate(AXE);
  const violations = await p.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 3) })));
  const bad = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  figures.axeSeriousOrCritical[what] = bad.length;
  assert.deepEqual(bad, [], `${what}: axe found ${JSON.stringify(bad)}`);
}

/** Whether the page scrolls sideways (the phone's test). */
async function sideways(p, what) {
  const over = await p.evaluate(() => {
    const el = document.scrollingElement;
    // The outermost elements that stick out (their parent does not).
    // (Not innerWidth: a phone's layout viewport widens to fit what sticks out.)
    const out = (e) => e.getBoundingClientRect().right > el.clientWidth + 1;
    const all = (root) => [...root.querySelectorAll("*")].flatMap((e) => [e, ...(e.shadowRoot ? all(e.shadowRoot) : [])]);
    const wide = all(document.body).filter((e) => out(e) && !(e.parentElement && out(e.parentElement))).map((e) => `${e.tagName.toLowerCase()}.${e.className} (${Math.round(e.getBoundingClientRect().right)}px)`).slice(0, 5);
    return { extra: el.scrollWidth - el.clientWidth, wide };
  });
  figures.sidewaysScrollAt390[what] = over.extra > 0;
  assert.equal(over.extra, 0, `${what} scrolls sideways by ${over.extra}px: ${over.wide.join(", ")}`);
}

async function go(p, hash, ready) {
  step = hash;
  // The page drawn before says it is ready until the new one starts: forget it first.
  await p.evaluate((x) => {
    if (location.hash !== x) delete document.body.dataset.ready;
    location.hash = x;
  }, hash);
  if (ready) await p.waitForSelector(ready, { timeout: 15000 });
  // The page has loaded all it shows (tests wait for this).
  await p.waitForSelector(`body[data-ready="${hash.slice(2).split("/")[0]}"]`, { timeout: 15000 });
}

const text = (p, sel) => p.$eval(sel, (el) => el.textContent.trim());
const auth = { headers: { authorization: `Bearer ${ADMIN}` } };
const api = async (p) => (await h.fetch(p, auth)).json();
const words = (n) => Array.from({ length: n }, (_, i) => `word${i + 1} `).join("");

/** Sends `message` from the composer and waits for its answer to be done. */
async function chat(p, message) {
  const before = await p.$$eval(".bubble.assistant[data-done=true]", (els) => els.length);
  await p.type("#message", message);
  await p.keyboard.press("Enter");
  await p.waitForFunction((n) => document.querySelectorAll(".bubble.assistant[data-done=true]").length > n, { timeout: 20000 }, before);
}

describe("the console in Chromium", { skip: SKIP }, () => {
  before(async () => {
    const { default: puppeteer } = await import("puppeteer-core");
    h = await startHearth({
      assets: true,
      bindings: {
        ADMIN_TOKEN: ADMIN,
        AGENTS: "main,work",
        TEMPLATE: "concierge",
        TIMEZONE: TZ,
        USAGE_SETTLE_MS: "0",
        LLM_MAX_ATTEMPTS: "1",
        LLM_PRICES: JSON.stringify({ "claude-test": PRICE }),
      },
    });
    await h.putFile("_catalog/defaults/workspace/SOUL.md", "Calm and brief.");
    await h.putFile("agents/main/USER.md", "Olga drinks green tea.");
    await h.putFile("_catalog/concierge/workspace/IDENTITY.md", "- **Name:** Conci");
    await h.putFile("_catalog/concierge/workspace/GUARDRAILS.md", "Never share secrets. (v1)");
    await h.putFile("skills/weather/SKILL.md", "---\nname: weather\ndescription: Looks up the weather.\n---\nUse web_fetch.");
    await h.putFile("skills/shell/SKILL.md", "---\nname: shell\ndescription: Runs commands.\ncompatibility: Needs Bash in a terminal\n---\n");
    await h.putFile("_catalog/defaults/workspace/STYLE.md", "Plain words, short sentences.");
    browser = await puppeteer.launch({
      executablePath: browserPath,
      headless: true,
      userDataDir: fs.mkdtempSync(path.join(os.tmpdir(), "hearth-chromium-")),
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
    });
    await browser.defaultBrowserContext().overridePermissions(new URL(h.address).origin, ["clipboard-read", "clipboard-write", "clipboard-sanitized-write"]);
    page = await browser.newPage();
    await page.setViewport(LAPTOP);
    watch(page, "laptop");
  });
  after(async () => {
    if (browser) {
      figures.firstLoadGzipKiB = firstLoadKiB();
      fs.mkdirSync(ARTIFACTS, { recursive: true });
      fs.writeFileSync(path.join(ARTIFACTS, "figures.json"), `${JSON.stringify(figures, null, 2)}\n`);
      console.log(`# console figures: ${JSON.stringify(figures)}`);
    }
    await browser?.close();
    await h?.close();
  });

  test("the login page shows no menu; a wrong token is told, the right one opens the console", async () => {
    await page.goto(new URL("/console", h.address).toString());
    await page.waitForSelector("#token");
    const top = await page.$eval(".top", (el) => ({ hidden: el.hidden, display: getComputedStyle(el).display, logout: document.getElementById("logout").getBoundingClientRect().height }));
    assert.deepEqual(top, { hidden: true, display: "none", logout: 0 }, "no nav or Log out before logging in");
    await axe(page, "login 1366");
    await shot(page, "login");
    await page.type("#token", "wrong-token");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector("#login-error")?.textContent.includes("wrong token"));
    await page.$eval("#token", (el) => (el.value = ""));
    await page.type("#token", ADMIN);
    await page.keyboard.press("Enter");
    await page.waitForSelector(".top:not([hidden]) nav a[aria-current=page]");
    const c = (await page.cookies()).find((x) => x.name === "hearth_console");
    assert.ok(c, "session cookie set");
    assert.equal(c.httpOnly, true);
    assert.equal(c.sameSite, "Strict");
    assert.ok(!c.value.includes(ADMIN));
    assert.equal(await page.evaluate(() => document.cookie), "", "the page's script cannot read it");
  });

  test("chat: an empty thread says what the agent can do, and the answer shows Thinking… until it comes", async () => {
    await go(page, "#/chat/main", "#message");
    await page.waitForFunction(() => document.querySelector(".empty")?.textContent.includes("weather (Looks up the weather.)"));
    const empty = await text(page, ".empty");
    for (const can of ["remember things", "workspace files", "web page", "/reset"]) assert.ok(empty.includes(can), `${can}: ${empty}`);
    assert.ok(!empty.includes("shell"), "a skill left out is not offered");
    await axe(page, "chat empty 1366");
    h.llm.push({ text: "Good morning!", delayMs: 800 });
    await page.type("#message", "Good morning");
    await page.keyboard.press("Enter");
    await page.waitForSelector(".bubble.assistant .thinking", { visible: true });
    assert.equal(await page.$eval(".chat-log", (el) => el.getAttribute("aria-busy")), "true", "the log is busy while the answer is written");
    assert.ok(await page.$("#stop:not([hidden])"), "Stop is offered while it writes");
    await page.waitForSelector(".bubble.assistant[data-done=true]");
    assert.equal(await page.$(".bubble.assistant .thinking"), null);
    assert.equal(await text(page, ".bubble.assistant[data-done=true] .md"), "Good morning!");
    assert.equal(await page.$(".empty"), null);
    assert.ok(await page.$("#stop[hidden]"));
  });

  test("chat: with a model that answers at once, the first words show soon after Enter (measured)", async () => {
    await go(page, "#/chat/latency", "#message");
    const runs = [];
    for (let i = 0; i < 7; i++) {
      h.llm.push({ text: `Answer number ${i}.` });
      await page.evaluate(() => {
        window.__shown = null;
        window.__enter = null;
        document.getElementById("message").addEventListener("keydown", (e) => e.key === "Enter" && window.__enter === null && (window.__enter = performance.now()), { capture: true });
        const log = document.querySelector(".chat-log");
        const before = log.querySelectorAll(".bubble.assistant").length;
        const seen = new MutationObserver(() => {
          const b = log.querySelectorAll(".bubble.assistant")[before];
          if (!b?.querySelector(".md")?.textContent.trim()) return;
          seen.disconnect();
          // Shown: the next frame after the words are in the page.
          requestAnimationFrame(() => (window.__shown = performance.now() - window.__enter));
        });
        seen.observe(log, { subtree: true, childList: true, characterData: true });
      });
      const done = await page.$$eval(".bubble.assistant[data-done=true]", (els) => els.length);
      await page.type("#message", `Question ${i}`);
      await page.keyboard.press("Enter");
      await page.waitForFunction(() => window.__shown !== null);
      runs.push(await page.evaluate(() => window.__shown));
      await page.waitForFunction((n) => document.querySelectorAll(".bubble.assistant[data-done=true]").length > n, {}, done);
    }
    const sorted = [...runs].sort((a, b) => a - b);
    figures.enterToFirstWordsMs = { median: Math.round(sorted[3]), min: Math.round(sorted[0]), max: Math.round(sorted[6]), runs: runs.map(Math.round) };
    // The target is 100 ms (README); the bound here leaves room for a busy test machine.
    assert.ok(sorted[3] < 400, `median ${sorted[3]} ms`);
  });

  test("chat: markdown is rendered and nothing the model writes runs; code has its language and Copy; a wide table scrolls in its bubble", async () => {
    const wide = `| ${Array.from({ length: 12 }, (_, i) => `column${i}`).join(" | ")} |\n|${"---|".repeat(12)}\n| ${Array.from({ length: 12 }, (_, i) => `value-number-${i}`).join(" | ")} |`;
    const code = `const answer = 42; // ${"long ".repeat(60)}`;
    const reply = [
      "Here is **bold**, *italic* and `inline`.",
      "",
      "- one",
      "- two",
      "",
      "```js",
      code,
      "```",
      "",
      wide,
      "",
      "A [safe link](https://example.com/) and [a trap](javascript:window.__pwned=2).",
      "",
      '<img src="x" onerror="window.__pwned=1"><script>window.__pwned=3</script><iframe src="https://example.com"></iframe>',
    ].join("\n");
    h.llm.push({ text: reply, pieceDelayMs: 2 });
    await go(page, "#/chat/main", "#message");
    await chat(page, "Show me what you can format");
    const bubble = ".bubble.assistant[data-done=true]:last-of-type";
    const found = await page.$eval(bubble, (b) => ({
      strong: b.querySelector("strong")?.textContent,
      em: b.querySelector("em")?.textContent,
      items: [...b.querySelectorAll("li")].map((li) => li.textContent),
      dangerous: b.querySelectorAll("img, script, iframe, object, embed, style").length,
      handlers: [...b.querySelectorAll("*")].flatMap((e) => [...e.attributes].map((a) => a.name)).filter((n) => n.startsWith("on") || n === "style"),
      trap: [...b.querySelectorAll("a")].find((a) => a.textContent === "a trap")?.getAttribute("href") ?? null,
      safe: [...b.querySelectorAll("a")].find((a) => a.textContent === "safe link") && { href: b.querySelector('a[href="https://example.com/"]')?.getAttribute("target"), rel: b.querySelector('a[href="https://example.com/"]')?.rel },
      shownAsText: b.textContent.includes('<img src="x"'),
      lang: b.querySelector(".code .lang")?.textContent,
    }));
    assert.equal(found.strong, "bold");
    assert.equal(found.em, "italic");
    assert.deepEqual(found.items, ["one", "two"]);
    assert.equal(found.dangerous, 0, "no image, script, frame or style from the model");
    assert.deepEqual(found.handlers, [], "no event handler or style attribute");
    assert.equal(found.trap, null, "a javascript: link has no href");
    assert.deepEqual(found.safe, { href: "_blank", rel: "noopener noreferrer nofollow" });
    assert.ok(found.shownAsText, "raw HTML is shown as text");
    assert.equal(found.lang, "js");
    assert.equal(await page.evaluate(() => window.__pwned ?? null), null, "nothing ran");
    await shot(page, "chat");
    // Copy puts the code on the clipboard.
    await page.click(`${bubble} .code button.copy`);
    await page.waitForFunction((b) => document.querySelector(`${b} .code button.copy`).textContent === "Copied", {}, bubble);
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), code);
    // The table and the code scroll inside the bubble, which stays inside the conversation.
    const fit = await page.$eval(bubble, (b) => {
      const log = b.closest(".chat-log").getBoundingClientRect();
      const wrap = b.querySelector(".table-wrap");
      const pre = b.querySelector(".code pre");
      return { inside: b.getBoundingClientRect().right <= log.right + 0.5, table: wrap.scrollWidth > wrap.clientWidth, code: pre.scrollWidth > pre.clientWidth };
    });
    assert.deepEqual(fit, { inside: true, table: true, code: true });
    await axe(page, "chat 1366");
  });

  test("chat: Stop cuts the answer being written; what was written stays, marked, after a reload", async () => {
    h.llm.push({ text: words(80), pieceDelayMs: 60 });
    await page.type("#message", "Count to eighty, slowly");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector(".bubble.assistant.streaming .md")?.textContent.includes("word4"));
    await page.click("#stop");
    await page.waitForSelector(".bubble.assistant.stopped[data-done=true]");
    const written = await text(page, ".bubble.assistant.stopped .md");
    assert.ok(written.startsWith("word1 word2 word3 word4"), written);
    assert.ok(!written.includes("word80"), "cut short");
    assert.match(await text(page, ".bubble.assistant.stopped .badge"), /Stopped/);
    await h.until(() => h.llm.requests.at(-1).aborted, { what: "the provider's stream aborted" });
    assert.ok(await page.$("#send:not([hidden])"), "Send is back");
    await page.reload();
    await page.waitForSelector("body[data-ready=chat]");
    const kept = await page.$$eval(".bubble.assistant.stopped", (els) => els.map((e) => [e.querySelector(".md").textContent.trim(), e.querySelector(".badge")?.textContent]));
    assert.deepEqual(kept, [[written.trim(), "Stopped"]]);
  });

  test("chat: a reload while an answer is written follows it again to its end", async () => {
    h.llm.push({ text: words(30), pieceDelayMs: 50 });
    await page.type("#message", "Count to thirty");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector(".bubble.assistant.streaming .md")?.textContent.includes("word3"));
    await page.reload();
    await page.waitForSelector("body[data-ready=chat]");
    await page.waitForSelector(".bubble.assistant.streaming");
    await page.waitForSelector(".bubble.assistant[data-done=true]:last-of-type:not(.stopped)", { timeout: 20000 });
    assert.equal(await page.$$eval(".bubble.assistant .md", (els) => els.at(-1).textContent.trim()), words(30).trim());
    assert.equal(await page.$$eval(".bubble.user .plain", (els) => els.filter((e) => e.textContent === "Count to thirty").length), 1, "the question once");
    await page.reload();
    await page.waitForSelector("body[data-ready=chat]");
    assert.equal(await page.$$eval(".bubble.assistant .md", (els) => els.at(-1).textContent.trim()), words(30).trim(), "and kept");
  });

  test("chat: a failed answer is said, and still there after a reload, after the question", async () => {
    h.llm.push({ status: 529 });
    await chat(page, "Are you there?");
    const said = await text(page, ".bubble.assistant.error[data-done=true] .plain");
    assert.ok(said.length > 10, said);
    await page.reload();
    await page.waitForSelector("body[data-ready=chat]");
    const last = await page.$$eval(".chat-log > *", (els) => els.slice(-2).map((e) => [e.className, e.querySelector(".plain")?.textContent]));
    assert.deepEqual(last, [
      ["bubble user", "Are you there?"],
      ["bubble note error", said],
    ]);
  });

  test("chat: New chat starts a thread titled by its first message; Shift+Enter adds a line and the composer grows", async () => {
    await page.$eval("body", (b) => delete b.dataset.ready);
    await page.click("#new-chat");
    await page.waitForFunction(() => /^#\/chat\/c-[0-9a-f]{20}$/.test(location.hash) && document.body.dataset.ready === "chat");
    const id = await page.evaluate(() => location.hash.split("/").pop());
    assert.match(await text(page, ".empty h2"), /A new chat with main/);
    assert.match(await text(page, ".empty"), /does not see your private notes/);
    const h0 = await page.$eval("#message", (el) => el.getBoundingClientRect().height);
    await page.type("#message", "Plan a trip to Lisbon");
    for (const line of ["two days", "by train", "in May"]) {
      await page.keyboard.down("Shift");
      await page.keyboard.press("Enter");
      await page.keyboard.up("Shift");
      await page.type("#message", line);
    }
    assert.equal(await page.$eval("#message", (el) => el.value), "Plan a trip to Lisbon\ntwo days\nby train\nin May");
    const h1 = await page.$eval("#message", (el) => el.getBoundingClientRect().height);
    assert.ok(h1 > h0 + 30, `the composer grows: ${h0} → ${h1}`);
    await page.keyboard.press("Enter");
    await page.waitForSelector(".bubble.assistant[data-done=true]");
    await go(page, "#/chat/main", "#message");
    const titles = await page.$$eval(".thread-list li", (lis) => lis.map((li) => [li.dataset.thread, li.querySelector(".title").textContent]));
    assert.deepEqual(titles.find(([t]) => t === id), [id, "Plan a trip to Lisbon"]);
    assert.equal(titles.find(([t]) => t === "main")[1], "Private chat (main)");
    assert.ok(await page.$(".bubble.assistant.stopped"), "main's history is back");
    await page.click(`.thread-list li[data-thread="${id}"] a`);
    await page.waitForFunction((t) => location.hash === `#/chat/${t}` && document.querySelector(".bubble.user")?.textContent.includes("Lisbon"), {}, id);
  });

  test("workspace: badges tell the truth; unsaved edits are marked and not dropped silently", async () => {
    await go(page, "#/workspace", 'li[data-path="SOUL.md"] [data-source="defaults"]');
    assert.equal(await text(page, 'li[data-path="USER.md"] .src'), "agent's own", "no lower layer has USER.md: not an override");
    assert.equal(await page.$('[data-source="override"]'), null);
    await page.click('li[data-path="SOUL.md"] button');
    await page.waitForSelector("pierce/.cm-content");
    assert.ok(await page.$("#save[disabled]"), "nothing to save yet");
    await page.click("pierce/.cm-content");
    await page.keyboard.down("Control");
    await page.keyboard.press("End");
    await page.keyboard.up("Control");
    await page.keyboard.type("\nAnd kind.");
    await page.waitForSelector(".file-pane .unsaved:not([hidden])");
    assert.ok(await page.$('li.dirty[data-path="SOUL.md"]'), "the file is marked in the tree");
    // Another file: asked first; "Cancel" keeps the edit.
    dialogs.answer = false;
    dialogs.asked.length = 0;
    await page.click('li[data-path="USER.md"] button');
    assert.match(dialogs.asked[0] ?? "", /SOUL\.md has unsaved changes/);
    assert.equal(await page.$eval(".file-pane", (el) => el.dataset.open), "SOUL.md");
    // Leaving the page is asked too.
    await page.evaluate(() => (location.hash = "#/usage"));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await page.evaluate(() => location.hash), "#/workspace");
    assert.equal(dialogs.asked.length, 2);
    dialogs.answer = true;
    await page.click("#save");
    await page.waitForSelector('li[data-path="SOUL.md"] [data-source="override"]');
    assert.equal(await text(page, 'li[data-path="SOUL.md"] .src'), "override");
    const stored = await (await (await h.bucket()).get("agents/main/SOUL.md")).text();
    assert.equal(stored, "Calm and brief.\nAnd kind.");
  });

  test("workspace: a file's history shows who changed it and why, what changed, and restores", async () => {
    await page.waitForSelector('.versions li[data-rev]');
    // A second version.
    await page.click("pierce/.cm-content");
    await page.keyboard.down("Control");
    await page.keyboard.press("End");
    await page.keyboard.up("Control");
    await page.keyboard.type("\nAnd funny.");
    await page.click("#save");
    await page.waitForFunction(() => document.querySelectorAll(".versions li[data-rev]").length === 2);
    const rows = await page.$$eval(".versions li[data-rev]", (lis) => lis.map((li) => li.textContent));
    assert.match(rows[0], /changed by you · console.*current/);
    assert.match(rows[1], /created by you/);
    await page.click(".versions li[data-rev]:first-child button");
    await page.waitForSelector(".version-detail .diff-lines");
    const added = await page.$$eval(".version-detail .diff-lines .add", (els) => els.map((e) => e.textContent));
    assert.ok(added.includes("+And funny."), JSON.stringify(added));
    await axe(page, "workspace history 1366");
    await shot(page, "workspace");
    // Restore the first version.
    await page.$$eval(".versions li[data-rev]:nth-child(2) button", (bs) => bs.find((b) => b.textContent === "Restore this version").click());
    await page.waitForFunction(() => document.querySelectorAll(".versions li[data-rev]").length === 3);
    assert.equal(await (await (await h.bucket()).get("agents/main/SOUL.md")).text(), "Calm and brief.\nAnd kind.");
  });

  test("workspace: delete says what it means and is undone from the same page", async () => {
    await page.click('li[data-path="USER.md"] button');
    await page.waitForSelector("#delete");
    await page.click("#delete");
    await page.waitForSelector("dialog.ask[open]");
    const asked = await text(page, "dialog.ask[open]");
    assert.match(asked, /Delete USER\.md\?/);
    assert.match(asked, /no template or default provides one/);
    assert.match(asked, /history/);
    await axe(page, "delete dialog 1366");
    await page.click('dialog.ask[open] [data-choice="yes"]');
    await page.waitForSelector("#undo-delete");
    assert.equal(await page.$('li[data-path="USER.md"]'), null);
    assert.equal(await (await h.bucket()).get("agents/main/USER.md"), null);
    await page.click("#undo-delete");
    await page.waitForSelector('li[data-path="USER.md"]');
    assert.equal(await (await (await h.bucket()).get("agents/main/USER.md")).text(), "Olga drinks green tea.");
    // Deleted again, then the page read anew: it is under Recently deleted.
    await page.click('li[data-path="USER.md"] button');
    await page.waitForSelector("#delete");
    await page.click("#delete");
    await page.click('dialog.ask[open] [data-choice="yes"]');
    await page.waitForSelector("#undo-delete");
    await go(page, "#/usage", "#period");
    await go(page, "#/workspace", 'li[data-deleted="USER.md"] button');
    await page.click('li[data-deleted="USER.md"] button');
    await page.waitForSelector('li[data-path="USER.md"] [data-source="own"]');
    assert.equal(await (await (await h.bucket()).get("agents/main/USER.md")).text(), "Olga drinks green tea.");
    // Removing an override says it inherits again.
    await page.click('li[data-path="SOUL.md"] button');
    await page.waitForSelector("#delete");
    assert.equal(await text(page, "#delete"), "Remove override");
    await page.click("#delete");
    assert.match(await text(page, "dialog.ask[open]"), /goes back to the version it inherits/);
    await page.click('dialog.ask[open] [data-choice="yes"]');
    await page.waitForSelector('li[data-path="SOUL.md"] [data-source="defaults"]');
    const skill = await page.$eval('tr[data-skill="shell"]', (tr) => tr.textContent);
    assert.match(skill, /left out: .*bash/);
    // STYLE.md is listed with the other workspace files.
    await page.waitForSelector('li[data-path="STYLE.md"] [data-source="defaults"]');
  });

  test("review a pinned update as a diff and accept it", async () => {
    // The pin was taken when the tree was first shown: now the template moves on.
    await h.putFile("_catalog/concierge/workspace/GUARDRAILS.md", "Never share secrets. (v2)\nAsk before buying.");
    await go(page, "#/schedule");
    await go(page, "#/workspace", 'li[data-path="GUARDRAILS.md"] [data-source="update"]');
    await page.click('li[data-path="GUARDRAILS.md"] button');
    await page.waitForSelector("#review");
    await page.click("#review");
    await page.waitForSelector("dialog[open] .diff-lines");
    const added = await page.$$eval("dialog[open] .diff-lines .add", (els) => els.map((e) => e.textContent));
    const removed = await page.$$eval("dialog[open] .diff-lines .del", (els) => els.map((e) => e.textContent));
    assert.deepEqual(added, ["+ Never share secrets. (v2)", "+ Ask before buying."]);
    assert.deepEqual(removed, ["- Never share secrets. (v1)"]);
    await axe(page, "review dialog 1366");
    await shot(page, "review");
    await page.click("#accept");
    await page.waitForSelector('li[data-path="GUARDRAILS.md"] [data-source="pinned"]');
    const pins = await api("/api/agents/main/pins");
    assert.equal(pins.files[0].updateAvailable, false);
  });

  test("bulk accept from the template's layer: every agent of the template takes the update", async () => {
    const pins = async (agent) => (await api(`/api/agents/${agent}/pins`)).files[0];
    await pins("work"); // work's pins are taken before the template moves on
    await h.putFile("_catalog/concierge/workspace/GUARDRAILS.md", "Never share secrets. (v3)");
    assert.equal((await pins("main")).updateAvailable, true);
    assert.equal((await pins("work")).updateAvailable, true);
    await page.select("#layer", "template:concierge");
    await page.waitForSelector('li[data-pending="GUARDRAILS.md"] button');
    assert.match(await text(page, "#no-history"), /keeps no history/, "the shared layer says its writes are not kept");
    assert.match(await text(page, 'li[data-pending="GUARDRAILS.md"]'), /main, work/);
    await page.click('li[data-pending="GUARDRAILS.md"] button');
    await page.waitForFunction(() => document.querySelector("#pending-title")?.nextElementSibling?.textContent.includes("latest guardrails"));
    assert.equal((await pins("main")).updateAvailable, false);
    assert.equal((await pins("work")).updateAvailable, false);
    await page.select("#layer", "agent");
    await page.waitForSelector('li[data-path="GUARDRAILS.md"] [data-source="pinned"]');
  });

  test("sessions: listed by channel and who they are with, with the last message; no internal keys", async () => {
    const r = await h.sendUpdate(tgUpdate({ from: FRIEND, text: "Hi from Telegram" }));
    assert.equal(r.status, 200);
    const key = `agent:main:telegram:dm:${FRIEND}`;
    await h.until(async () => (await api("/api/agents/main/sessions")).live.find((s) => s.sessionKey === key)?.last, { what: "Pat's session in the registry" });
    await go(page, "#/sessions", `li[data-key="${key}"]`);
    const item = await text(page, `li[data-key="${key}"]`);
    assert.match(item, /Pat \(direct messages\)/);
    assert.match(item, /main: echo: Hi from Telegram/);
    const groups = await page.$$eval(".session-group h3", (hs) => hs.map((x) => x.textContent));
    assert.ok(groups.includes("Telegram") && groups.includes("Your private chat"), groups.join());
    const titles = await page.$$eval(".session-list .title", (els) => els.map((e) => e.textContent));
    assert.ok(titles.includes("Plan a trip to Lisbon"), `API threads by title: ${titles}`);
    assert.ok(titles.every((t) => !t.startsWith("agent:")), titles.join(" | "));
    await page.click(`li[data-key="${key}"] button`);
    await page.waitForSelector(".reader .chat-log .bubble.user");
    assert.match(await text(page, ".reader .chat-log"), /Hi from Telegram/);
    await axe(page, "sessions 1366");
    await shot(page, "sessions");
  });

  test("memory: the new-note form is empty, the list and count follow saves and deletes, a refused save is said", async () => {
    await go(page, "#/memory", "#new-note");
    const count = async () => Number((await text(page, "#memory-stats")).match(/^(\d+) entr/)?.[1] ?? 0);
    await page.waitForFunction(() => document.querySelector("#memory-stats").textContent !== "");
    const before = await count();
    await page.click("#new-note");
    await page.waitForSelector("#note-name");
    const form = await page.$eval(".note-detail", (el) => ({ text: el.textContent, name: el.querySelector("#note-name").value, content: el.querySelector("#note-content").value }));
    assert.ok(!/null|undefined/.test(form.text), form.text);
    assert.deepEqual([form.name, form.content], ["", ""]);
    await page.type("#note-name", "bike");
    await page.type("#note-content", "The bike is in the shed.\nThe lock code is on the fridge.");
    await page.click("#note-save");
    await page.waitForSelector('ul[aria-label="Notes"] li[data-note="bike"]');
    await page.waitForFunction((n) => document.querySelector("#memory-stats").textContent.startsWith(`${n + 1} entr`), {}, before);
    await page.waitForSelector("#note-name[readonly]");
    // The same name again: refused (422), said beside the form, the text kept.
    await page.click("#new-note");
    await page.type("#note-name", "bike");
    await page.type("#note-content", "Another bike.");
    await page.click("#note-save");
    await page.waitForSelector(".note-detail .form-error [role=alert]");
    assert.match(await text(page, ".note-detail .form-error"), /Not saved: the name "bike" is already used/);
    assert.equal(await page.$eval("#note-content", (el) => el.value), "Another bike.");
    await page.click('li[data-note="bike"] button');
    await page.waitForFunction(() => document.querySelector("#note-content")?.value.startsWith("The bike is in the shed."));
    await axe(page, "memory 1366");
    await shot(page, "memory");
    await page.click("#note-delete");
    await page.waitForFunction(() => !document.querySelector('ul[aria-label="Notes"] li[data-note="bike"]'));
    await page.waitForFunction((n) => document.querySelector("#memory-stats").textContent.startsWith(`${n} entr`), {}, before);
  });

  test("schedule: the next heartbeat and the jobs in the agent's local time, with what they last said", async () => {
    await h.putFile("agents/main/HEARTBEAT.md", "- [ ] check the mail");
    await h.putFile("agents/main/cron.json", JSON.stringify([{ name: "digest", cron: "0 8 * * *", message: "Send me the morning digest" }]));
    h.llm.push({ text: "You have 2 new letters." });
    await (await h.mf.getWorker()).scheduled({ cron: "*/5 * * * *", scheduledTime: new Date() });
    await h.until(async () => (await api("/api/agents/main/sessions")).live.find((s) => s.sessionKey === "agent:main:heartbeat")?.last, { what: "the heartbeat's answer" });
    const s = await api("/api/agents/main/schedule");
    await go(page, "#/schedule", '[data-fact="next-heartbeat"]');
    const local = new Intl.DateTimeFormat("en-GB", { timeZone: TZ, weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" }).format(new Date(s.heartbeat.nextSlot));
    assert.ok((await text(page, '[data-fact="next-heartbeat"]')).startsWith(local), `${local} in the agent's zone`);
    assert.match(await text(page, '[data-fact="last-heartbeat"]'), /: ran/);
    assert.match(await text(page, "#hb-title ~ .said"), /You have 2 new letters\./);
    const job = await text(page, 'li[data-job="digest"]');
    const next = new Intl.DateTimeFormat("en-GB", { timeZone: TZ, weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" }).format(new Date(s.jobs[0].nextRun));
    assert.ok(job.includes(next) && job.includes("08:00"), job);
    assert.match(job, /Send me the morning digest/);
    assert.match(await text(page, "main > p.muted"), new RegExp(`local time \\(${TZ}\\)`));
    await axe(page, "schedule 1366");
    await shot(page, "schedule");
  });

  test("tasks: a background task with what it found, and a running one cancelled", async () => {
    const spawn = (id, task, title) => ({ content: [{ type: "text", text: "On it." }, { type: "tool_use", id, name: "spawn_task", input: { task, title } }], stopReason: "tool_use" });
    const ask = async (text) => {
      const r = await h.fetch("/api/agents/main/generate", { method: "POST", headers: { ...auth.headers, "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "user", content: text }], threadId: "errands" }) });
      return (await r.json()).text;
    };
    h.llm.push(spawn("toolu_k1", "Compare three kettles.", "Kettles"), { text: "The Acme kettle is the quietest." });
    assert.match(await ask("compare kettles in the background"), /Task t1 runs in the background/);
    await h.until(async () => (await api("/api/agents/main/tasks")).tasks.some((t) => t.id === "t1" && t.delivered), { what: "the first task's result" });
    let release;
    const asked = h.llm.requests.length;
    h.llm.push(spawn("toolu_k2", "Book a table for two.", "Table"), { text: "too late", gate: new Promise((r) => (release = r)) });
    assert.match(await ask("book a table in the background"), /Task t2 runs/);
    await h.until(() => h.llm.requests.length === asked + 2, { what: "the second sub-agent at work" });
    await go(page, "#/tasks", '[data-task="t1"][data-state="done"]');
    assert.match(await text(page, '[data-task="t1"] details'), /The Acme kettle is the quietest\./);
    assert.match(await text(page, '[data-task="t1"]'), /Result postedyes/);
    assert.match(await text(page, '[data-task="t2"] [data-fact="state"]'), /^Running/);
    await axe(page, "tasks 1366");
    await shot(page, "tasks");
    await page.click('[data-cancel="t2"]');
    await page.waitForSelector('[data-task="t2"][data-state="cancelled"]');
    release();
  });

  test("schedule: the reminders the agent set, with their chat and next time; Cancel cancels one", async () => {
    h.llm.push({ toolCall: { name: "remind", input: { in: "3h", text: "Call the plumber back" } } }, { text: "I'll remind you." });
    await go(page, "#/chat/main", "#message");
    await chat(page, "remind me in 3 hours to call the plumber back");
    const { reminders } = await api("/api/agents/main/reminders");
    const r = reminders.find((x) => x.text === "Call the plumber back");
    assert.ok(r, JSON.stringify(reminders));
    await go(page, "#/schedule", `li[data-reminder="${r.id}"]`);
    const local = new Intl.DateTimeFormat("en-GB", { timeZone: TZ, weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" }).format(new Date(r.nextAt));
    const li = await text(page, `li[data-reminder="${r.id}"]`);
    assert.ok(li.includes(local) && li.includes("in 3 h") && li.includes("sends the text"), li);
    await axe(page, "schedule with reminders 1366");
    dialogs.answer = true;
    await page.click(`li[data-reminder="${r.id}"] button`);
    await page.waitForFunction((id) => !document.querySelector(`li[data-reminder="${id}"]`), {}, r.id);
    assert.ok(!(await api("/api/agents/main/reminders")).reminders.some((x) => x.id === r.id), "cancelled in the Agent object");
  });

  test("usage: the charts are drawn from the ledger's figures, as of a time, with Refresh", async () => {
    const calls = h.llm.requests.filter((r) => r.usage);
    await h.until(async () => (await api("/api/agents/main/usage")).calls >= calls.length, { what: "the ledger" });
    const report = await api("/api/agents/main/usage?period=month");
    const asked = [];
    const seen = (r) => r.url().includes("/usage") && asked.push(new URL(r.url()).search);
    page.on("request", seen);
    await go(page, "#/usage", 'svg[data-chart="Cost by day (USD)"] rect');
    assert.deepEqual(asked, ["?period=month"], "one report");
    const bars = await page.$$eval('svg[data-chart="Cost by model (USD)"] rect', (rs) => rs.map((r) => [r.dataset.label, Number(r.dataset.value)]));
    assert.deepEqual(bars.map((b) => b[0]), ["claude-test"]);
    assert.ok(Math.abs(bars[0][1] - report.totalCost) < 2e-6, `${bars[0][1]} vs ${report.totalCost}`);
    const kinds = await page.$$eval('svg[data-chart="Tokens by kind"] rect', (rs) => rs.map((r) => [r.dataset.label, Number(r.dataset.value), Number(r.getAttribute("width"))]));
    assert.equal(kinds.reduce((a, k) => a + k[1], 0), report.totalTokens);
    const [a, b] = kinds;
    assert.ok(Math.abs((a[2] / b[2]) / (a[1] / b[1]) - 1) < 0.02, `drawn to scale: ${a} ${b}`);
    const today = new Intl.DateTimeFormat("en-CA", { timeZone: report.timezone }).format(new Date());
    const days = await page.$$eval('svg[data-chart="Cost by day (USD)"] rect', (rs) => rs.map((r) => r.dataset.label));
    assert.equal(days.at(-1), today);
    assert.equal(await text(page, '[data-figure="cost"] b'), `$${report.totalCost.toFixed(4)}`);
    assert.ok(calls.some((c) => costOf(c.usage) > 0));
    // "As of" a time, and Refresh reads the report again.
    assert.match(await text(page, ".as-of"), /^As of /);
    const first = await page.$eval(".as-of", (el) => el.dataset.asOf);
    await new Promise((r) => setTimeout(r, 20));
    await page.click("#refresh");
    await page.waitForFunction((t) => document.querySelector(".as-of")?.dataset.asOf !== t, {}, first);
    page.off("request", seen);
    assert.deepEqual(asked, ["?period=month", "?period=month"]);
    await axe(page, "usage 1366");
    await shot(page, "usage");
  });

  test("loading: a page being read says so (aria-busy), and the old page is gone at once", async () => {
    await go(page, "#/usage", "#period");
    await page.setRequestInterception(true);
    const slow = (r) => (r.url().includes("/schedule") ? setTimeout(() => r.continue(), 700) : r.continue());
    page.on("request", slow);
    await page.evaluate(() => (location.hash = "#/schedule"));
    await page.waitForSelector("main[aria-busy=true] .loading");
    assert.equal(await page.$("#period"), null, "the usage page is gone");
    await page.waitForSelector("body[data-ready=schedule]");
    assert.equal(await page.$eval("main", (m) => m.getAttribute("aria-busy")), null);
    page.off("request", slow);
    await page.setRequestInterception(false);
  });

  test("dark mode: from the system's setting, and the toggle, which is kept", async () => {
    const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const dark = (c) => c.match(/\d+/g).slice(0, 3).reduce((s, x) => s + Number(x), 0) < 150;
    await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "dark" }]);
    await go(page, "#/chat/main", "#message");
    assert.ok(dark(await bg()), await bg());
    assert.equal(await page.$eval("#theme", (b) => b.getAttribute("aria-pressed")), "true");
    await axe(page, "chat dark 1366");
    await go(page, "#/workspace", 'li[data-path="USER.md"]');
    await page.click('li[data-path="USER.md"] button');
    await page.waitForSelector("pierce/.cm-content");
    await page.waitForSelector(".versions li[data-rev]");
    await axe(page, "workspace dark 1366");
    await shot(page, "workspace-dark");
    await page.click("#theme");
    assert.ok(!dark(await bg()), "the toggle turns it light");
    await page.reload();
    await page.waitForSelector("body[data-ready]");
    assert.ok(!dark(await bg()), "and it is kept");
    await page.click("#theme");
    assert.ok(dark(await bg()));
    await page.evaluate(() => localStorage.removeItem("hearth-theme"));
    await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "light" }]);
    await page.reload();
    await page.waitForSelector("body[data-ready]");
    assert.ok(!dark(await bg()));
  });

  describe("on a phone (390×844, touch)", () => {
    before(async () => {
      phone = await browser.newPage();
      await phone.setViewport(PHONE);
      watch(phone, "phone");
      await phone.goto(new URL("/console#/chat/main", h.address).toString());
      await phone.waitForSelector("body[data-ready=chat]");
    });

    test("the menu is folded; Menu opens it and a link closes it", async () => {
      const shown = () => phone.$eval('nav a[href="#/workspace"]', (a) => a.getBoundingClientRect().height > 0);
      assert.equal(await shown(), false);
      assert.ok(await phone.$eval("#menu", (b) => b.getBoundingClientRect().height > 0));
      assert.ok((await phone.$eval(".top", (t) => t.getBoundingClientRect().height)) < 70, "the header is one line");
      await phone.click("#menu");
      assert.equal(await phone.$eval("#menu", (b) => b.getAttribute("aria-expanded")), "true");
      assert.equal(await shown(), true);
      await axe(phone, "menu open 390");
      await phone.click('nav a[href="#/workspace"]');
      await phone.waitForSelector("body[data-ready=workspace]");
      assert.equal(await shown(), false);
      assert.equal(await phone.$eval("#menu", (b) => b.getAttribute("aria-expanded")), "false");
    });

    test("chat: a long code line stays in its bubble, the composer stays in view, Enter adds a line and Send sends", async () => {
      h.llm.push({ text: `Run this:\n\n\`\`\`sh\n${"curl -s https://example.com/a/very/long/path?with=query ".repeat(6)}\n\`\`\`\n\nThen ${"a-very-long-unbroken-word".repeat(4)}.` });
      await go(phone, "#/chat/main", "#message");
      await phone.tap("#message");
      await phone.type("#message", "How do I fetch it?");
      await phone.keyboard.press("Enter");
      assert.equal(await phone.$eval("#message", (el) => el.value), "How do I fetch it?\n", "Enter adds a line on a phone");
      assert.match(await text(phone, "#composer-hint"), /Send button sends/);
      await phone.keyboard.type("Thanks");
      await phone.tap("#send");
      await phone.waitForFunction(() => document.querySelector(".bubble.assistant[data-done=true]:last-of-type .code"));
      assert.equal(await phone.$$eval(".bubble.user .plain", (ps) => ps.at(-1).textContent), "How do I fetch it?\nThanks");
      await sideways(phone, "chat 390");
      const composer = await phone.$eval(".composer", (f) => f.getBoundingClientRect().bottom);
      assert.ok(composer <= 844, `the composer is in view (bottom ${composer})`);
      await axe(phone, "chat 390");
      await shot(phone, "chat-phone");
    });

    test("every page: one column, no sideways scroll, no serious axe violation", async () => {
      for (const name of PAGES) {
        await go(phone, `#/${name}`);
        await new Promise((r) => setTimeout(r, 150));
        await sideways(phone, `${name} 390`);
        await axe(phone, `${name} 390`);
      }
      // The workspace with a file and its history open.
      await go(phone, "#/workspace", 'li[data-path="USER.md"] button');
      await phone.tap('li[data-path="USER.md"] button');
      await phone.waitForSelector("pierce/.cm-content");
      await phone.waitForSelector(".versions li[data-rev]");
      const widths = await phone.$eval(".editor", (e) => e.getBoundingClientRect().width);
      assert.ok(widths > 330, `the editor has the width of the screen (${widths}px)`);
      await sideways(phone, "workspace file 390");
      await axe(phone, "workspace file 390");
      await shot(phone, "workspace-phone");
      // A conversation open on the sessions page.
      await go(phone, "#/sessions", ".session-list button");
      await phone.tap(".session-list button");
      await phone.waitForSelector(".reader .chat-log .bubble");
      await sideways(phone, "sessions open 390");
    });

    test("login on a phone: no menu, accessible", async () => {
      const other = await browser.createBrowserContext();
      const p = await other.newPage();
      await p.setViewport(PHONE);
      await p.goto(new URL("/console", h.address).toString());
      await p.waitForSelector("#token");
      assert.equal(await p.$eval(".top", (t) => getComputedStyle(t).display), "none");
      await sideways(p, "login 390");
      await axe(p, "login 390");
      await other.close();
    });
  });

  test("keyboard only: skip link, pages, a chat sent, a file opened, edited and saved", async () => {
    await page.bringToFront();
    await go(page, "#/chat/main", "#message");
    const active = () => page.evaluate(() => {
      let el = document.activeElement;
      while (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement;
      return el ? `${el.tagName.toLowerCase()}#${el.id}.${typeof el.className === "string" ? el.className : ""}|${el.getAttribute("href") ?? ""}|${el.textContent.trim().slice(0, 30)}` : "";
    });
    /** Tabs (backwards with `back`) until the focus matches `pred`; the stops seen. */
    async function tabTo(pred, { back = false, max = 60 } = {}) {
      const seen = [];
      for (let i = 0; i < max; i++) {
        if (back) await page.keyboard.down("Shift");
        await page.keyboard.press("Tab");
        if (back) await page.keyboard.up("Shift");
        const a = await active();
        seen.push(a);
        if (pred(a)) return seen;
      }
      assert.fail(`not reached by Tab: ${seen.join(" → ")}`);
    }
    await page.focus(".skip");
    await page.keyboard.press("Enter");
    assert.match(await active(), /^main#main/);
    assert.equal(await page.evaluate(() => location.hash), "#/chat/main", "the skip link moves the focus, not the page");
    const walk = await tabTo((a) => a.startsWith("textarea#message"));
    assert.ok(walk.some((a) => a.includes("#new-chat")), `New chat is on the way: ${walk.join(" → ")}`);
    await page.keyboard.type("Hello from the keyboard");
    h.llm.push({ text: "Hello, keyboard." });
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => [...document.querySelectorAll(".bubble.assistant[data-done=true] .md")].some((m) => m.textContent.trim() === "Hello, keyboard."));
    const back = await tabTo((a) => a.includes("|#/workspace|"), { back: true });
    for (const want of ["button#logout", "button#theme", "select#agent", "|#/schedule|", "|#/usage|"]) assert.ok(back.some((a) => a.includes(want)), `${want}: ${back.join(" → ")}`);
    await page.keyboard.press("Enter");
    await page.waitForSelector("body[data-ready=workspace]");
    await tabTo((a) => a.startsWith("button") && a.includes("USER.md"));
    await page.keyboard.press("Enter");
    await page.waitForSelector("pierce/.cm-content");
    await tabTo((a) => a.includes("cm-content"));
    await page.keyboard.press("End");
    await page.keyboard.type(" And oolong.");
    // Tab leaves the editor (it does not indent), then reaches Save.
    await tabTo((a) => a.startsWith("button#save"), { back: true });
    await page.keyboard.press("Enter");
    await h.until(async () => (await (await (await h.bucket()).get("agents/main/USER.md")).text()).endsWith("And oolong."), { what: "the save" });
    assert.deepEqual(cspErrors, [], "no Content-Security-Policy violation on any page");
    assert.deepEqual(pageErrors, [], "no script error on any page");
  });

  test("logging out ends the session and shows the login without the menu", async () => {
    await page.click("#logout");
    await page.waitForSelector("#token");
    assert.equal(await page.$eval(".top", (t) => getComputedStyle(t).display), "none");
    const r = await page.evaluate(async () => (await fetch("/api/agents")).status);
    assert.equal(r, 401);
  });
});

/** The first load's JS+CSS, gzip: app.js, style.css and the chunks app.js
 * imports statically (what scripts/build-console.mjs prints). */
function firstLoadKiB() {
  const dir = path.join(ROOT, "dist-console/console");
  const files = new Set(["style.css"]);
  const visit = (rel) => {
    if (files.has(rel)) return;
    files.add(rel);
    const code = fs.readFileSync(path.join(dir, rel), "utf8");
    for (const m of code.matchAll(/(?:from|import)\s*"\.\/([^"]+)"/g)) visit(path.posix.join(path.posix.dirname(rel), m[1]));
  };
  visit("app.js");
  const bytes = [...files].reduce((s, f) => s + zlib.gzipSync(fs.readFileSync(path.join(dir, f)), { level: 9 }).length, 0);
  return Number((bytes / 1024).toFixed(1));
}
