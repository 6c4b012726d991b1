// The web console in a real browser: Debian's chromium driven by
// puppeteer-core against the built Worker (and its static assets) in
// workerd. Log in, turn an inherited file into an override and back, review
// and accept a pinned update, chat with a streamed answer, and a usage chart
// drawn from known ledger figures; axe-core finds no serious or critical
// violation on any page, and the pages are usable from the keyboard.
// Screenshots go to .artifacts/console/ (README's come from there).
// Without a browser the tests skip and say why.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { startHearth } from "./helpers/hearth.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ARTIFACTS = path.join(ROOT, ".artifacts/console");
const ADMIN = "browser-admin-token-42";
const PRICE = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const costOf = (u) => (u.input * PRICE.input + u.output * PRICE.output + u.cacheRead * PRICE.cacheRead + u.cacheWrite * PRICE.cacheWrite) / 1e6;

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
const cspErrors = [];
let step = "start";

async function shot(name) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) });
}

/** axe-core in the page (evaluated through DevTools, so the page's CSP stays on). */
async function axe(what) {
  step = `axe ${what}`;
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 3) })));
  const bad = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(bad, [], `${what}: axe found ${JSON.stringify(bad)}`);
}

async function go(hash, ready) {
  step = hash;
  await page.evaluate((x) => (location.hash = x), hash);
  await page.waitForSelector(ready, { timeout: 15000 });
  // The page has loaded all it shows and moved the focus to its content.
  await page.waitForSelector(`body[data-ready="${hash.slice(2)}"]`, { timeout: 15000 });
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
        USAGE_SETTLE_MS: "0",
        LLM_PRICES: JSON.stringify({ "claude-test": PRICE }),
      },
    });
    await h.putFile("_catalog/defaults/workspace/SOUL.md", "Calm and brief.");
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
    page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 760 });
    page.on("console", (m) => {
      if (/Content.Security.Policy/i.test(m.text())) cspErrors.push(`${step}: ${m.text()}`);
      if (m.type() === "error") console.log(`# browser console: ${m.text()}`);
    });
    page.on("pageerror", (e) => console.log(`# page error: ${e.message}`));
    page.on("dialog", (d) => d.accept());
  });
  after(async () => {
    await browser?.close();
    await h?.close();
  });

  test("log in with ADMIN_TOKEN: a wrong one is told, the right one opens the console", async () => {
    await page.goto(new URL("/console", h.address).toString());
    await page.waitForSelector("#token");
    await axe("login");
    await shot("login");
    await page.type("#token", "wrong-token");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector("#login-error")?.textContent.includes("wrong token"));
    await page.$eval("#token", (el) => (el.value = ""));
    await page.type("#token", ADMIN);
    await page.keyboard.press("Enter");
    await page.waitForSelector(".top:not([hidden]) nav a[aria-current=page]");
    const cookies = await page.cookies();
    const c = cookies.find((x) => x.name === "hearth_console");
    assert.ok(c, "session cookie set");
    assert.equal(c.httpOnly, true);
    assert.equal(c.sameSite, "Strict");
    assert.ok(!c.value.includes(ADMIN));
    assert.equal(await page.evaluate(() => document.cookie), "", "the page's script cannot read it");
  });

  test("edit an inherited file into an override, see its icon change, then revert", async () => {
    await go("#/workspace", 'li[data-path="SOUL.md"] [data-source="defaults"]');
    await page.click('li[data-path="SOUL.md"] button');
    await page.waitForSelector("pierce/.cm-content");
    await page.click("pierce/.cm-content");
    await page.keyboard.down("Control");
    await page.keyboard.press("End");
    await page.keyboard.up("Control");
    await page.keyboard.type("\nAnd kind.");
    await page.click("#save");
    await page.waitForSelector('li[data-path="SOUL.md"] [data-source="agent"]');
    const stored = await (await (await h.bucket()).get("agents/main/SOUL.md")).text();
    assert.equal(stored, "Calm and brief.\nAnd kind.");
    await page.waitForSelector("pierce/.cm-content");
    await axe("workspace");
    await shot("workspace");
    await page.click("#revert");
    await page.waitForSelector('li[data-path="SOUL.md"] [data-source="defaults"]');
    assert.equal(await (await h.bucket()).get("agents/main/SOUL.md"), null);
    const skill = await page.$eval('tr[data-skill="shell"]', (tr) => tr.textContent);
    assert.match(skill, /left out: .*bash/);
    // STYLE.md is listed with the other workspace files.
    await page.waitForSelector('li[data-path="STYLE.md"] [data-source="defaults"]');
  });

  test("review a pinned update as a diff and accept it", async () => {
    // The pin was taken when the tree was first shown: now the template moves on.
    await h.putFile("_catalog/concierge/workspace/GUARDRAILS.md", "Never share secrets. (v2)\nAsk before buying.");
    await go("#/schedule", "h1");
    await go("#/workspace", 'li[data-path="GUARDRAILS.md"] [data-source="update"]');
    await page.click('li[data-path="GUARDRAILS.md"] button');
    await page.waitForSelector("#review");
    await page.click("#review");
    await page.waitForSelector("dialog[open] .diff-lines");
    const added = await page.$$eval("dialog[open] .diff-lines .add", (els) => els.map((e) => e.textContent));
    const removed = await page.$$eval("dialog[open] .diff-lines .del", (els) => els.map((e) => e.textContent));
    assert.deepEqual(added, ["+ Never share secrets. (v2)", "+ Ask before buying."]);
    assert.deepEqual(removed, ["- Never share secrets. (v1)"]);
    await axe("review dialog");
    await shot("review");
    await page.click("#accept");
    await page.waitForSelector('li[data-path="GUARDRAILS.md"] [data-source="pinned"]');
    const pins = await (await h.fetch("/api/agents/main/pins", { headers: { authorization: `Bearer ${ADMIN}` } })).json();
    assert.equal(pins.files[0].updateAvailable, false);
  });

  test("bulk accept from the template's layer: every agent of the template takes the update", async () => {
    const auth = { headers: { authorization: `Bearer ${ADMIN}` } };
    const pins = async (agent) => (await (await h.fetch(`/api/agents/${agent}/pins`, auth)).json()).files[0];
    await pins("work"); // work's pins are taken before the template moves on
    await h.putFile("_catalog/concierge/workspace/GUARDRAILS.md", "Never share secrets. (v3)");
    assert.equal((await pins("main")).updateAvailable, true);
    assert.equal((await pins("work")).updateAvailable, true);
    await page.select("#layer", "template:concierge");
    await page.waitForSelector('li[data-pending="GUARDRAILS.md"] button');
    assert.match(await page.$eval("#no-history", (p) => p.textContent), /keeps no history/, "the shared layer says its writes are not kept");
    const waiting = await page.$eval('li[data-pending="GUARDRAILS.md"]', (li) => li.textContent);
    assert.match(waiting, /main, work/);
    await page.click('li[data-pending="GUARDRAILS.md"] button');
    await page.waitForFunction(() => document.querySelector("#pending-title")?.nextElementSibling?.textContent.includes("latest guardrails"));
    assert.equal((await pins("main")).updateAvailable, false);
    assert.equal((await pins("work")).updateAvailable, false);
    await page.select("#layer", "agent");
    await page.waitForSelector('li[data-path="GUARDRAILS.md"] [data-source="pinned"]');
  });

  test("chat: a streamed answer appears", async () => {
    // A tool round first (memory_search), then the answer: two kinds of work in the ledger.
    h.llm.push({ toolCall: { name: "memory_search", input: { query: "tea" } } }, { text: "The kettle is on, and the tea will be ready soon.", pieceDelayMs: 30 });
    await go("#/chat", "#message");
    await page.type("#message", "Is the tea ready?");
    await page.keyboard.press("Enter");
    await page.waitForSelector(".bubble.assistant[data-done=true]", { timeout: 20000 });
    const text = await page.$eval(".bubble.assistant[data-done=true]", (el) => el.lastChild.textContent);
    assert.equal(text, "The kettle is on, and the tea will be ready soon.");
    assert.ok(h.llm.requests.at(-1).body.stream, "the model was asked to stream");
    await axe("chat");
    await shot("chat");
  });

  test("usage: the charts are drawn from the ledger's figures", async () => {
    const calls = h.llm.requests.filter((r) => r.usage);
    const expectedCost = calls.reduce((s, r) => s + costOf(r.usage), 0);
    const expectedTokens = calls.reduce((s, r) => s + r.usage.input + r.usage.output + r.usage.cacheRead + r.usage.cacheWrite, 0);
    await h.until(async () => (await (await h.fetch("/api/agents/main/usage", { headers: { authorization: `Bearer ${ADMIN}` } })).json()).calls === calls.length, { what: "the ledger" });
    // The whole page, day chart too, is one report.
    const asked = [];
    const seen = (r) => r.url().includes("/usage") && asked.push(new URL(r.url()).search);
    page.on("request", seen);
    await go("#/usage", 'svg[data-chart="Cost by day (USD)"] rect');
    page.off("request", seen);
    assert.deepEqual(asked, ["?period=month"]);
    const bars = await page.$$eval('svg[data-chart="Cost by model (USD)"] rect', (rs) => rs.map((r) => [r.dataset.label, Number(r.dataset.value)]));
    assert.equal(bars.length, 1);
    assert.equal(bars[0][0], "claude-test");
    assert.ok(Math.abs(bars[0][1] - expectedCost) < 2e-6, `${bars[0][1]} vs ${expectedCost}`);
    const kinds = await page.$$eval('svg[data-chart="Tokens by kind"] rect', (rs) => rs.map((r) => [r.dataset.label, Number(r.dataset.value), Number(r.getAttribute("width"))]));
    assert.deepEqual(kinds.map((k) => k[0]).sort(), ["conversation", "toolRound"]);
    assert.equal(kinds.reduce((a, k) => a + k[1], 0), expectedTokens);
    // Drawn to scale: bar widths are in the ratio of their figures.
    const [a, b] = kinds;
    assert.ok(Math.abs(a[2] / b[2] - a[1] / b[1]) < 0.02, `widths ${a[2]}:${b[2]} vs figures ${a[1]}:${b[1]}`);
    const days = await page.$$eval('svg[data-chart="Cost by day (USD)"] rect', (rs) => rs.map((r) => [r.dataset.label, Number(r.dataset.value)]));
    // The month's last 7 days (fewer in its first days), up to today in the agent's zone.
    const { timezone } = await (await h.fetch("/api/agents/main/usage?period=month", { headers: { authorization: `Bearer ${ADMIN}` } })).json();
    const today = new Intl.DateTimeFormat("en-CA", { timeZone: timezone }).format(new Date());
    assert.equal(days.length, Math.min(7, Number(today.slice(8))));
    assert.equal(days.at(-1)[0], today);
    assert.ok(Math.abs(days.at(-1)[1] - expectedCost) < 2e-6, "today's bar is today's cost");
    assert.ok(days.slice(0, -1).every(([, v]) => v === 0), "no cost on the other days");
    const total = await page.$eval('[data-figure="cost"] b', (b) => b.textContent);
    assert.equal(total, `$${expectedCost.toFixed(4)}`);
    await axe("usage");
    await shot("usage");
  });

  test("sessions, memory and schedule pages open, readable and accessible", async () => {
    await go("#/sessions", ".tree button");
    await page.click(".tree button");
    await page.waitForSelector(".chat-log .bubble");
    await axe("sessions");
    await shot("sessions");
    const note = (name, content) => ({ call: "op", store: "main", op: { op: "add", name, content, kind: "note", created_at: Date.now() } });
    for (const n of [note("bike", "The bike is in the shed.\nThe lock code is on the fridge."), note("tea", "Olga drinks green tea, no sugar.")]) {
      await h.fetch("/api/agents/main/memory/call", { method: "POST", headers: { authorization: `Bearer ${ADMIN}` }, body: JSON.stringify(n) });
    }
    // Browsing without a search: the store's notes, newest first, with their first line.
    await go("#/memory", 'ul[aria-label="Notes"] li[data-note="bike"]');
    const listed = await page.$$eval('ul[aria-label="Notes"] li[data-note]', (lis) => lis.map((li) => [li.dataset.note, li.textContent]));
    assert.deepEqual(listed.map(([n]) => n), ["tea", "bike"]);
    assert.match(listed[1][1], /The bike is in the shed\. \(56 chars\)/);
    await page.click('li[data-note="bike"] button');
    await page.waitForFunction(() => document.querySelector("#note-content")?.value.startsWith("The bike is in the shed."));
    await page.type("#query", "green tea");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelectorAll('ul[aria-label="Notes"] button').length === 1);
    await page.click('ul[aria-label="Notes"] button');
    await page.waitForFunction(() => document.querySelector("#note-content")?.value === "Olga drinks green tea, no sugar.");
    await axe("memory");
    await shot("memory");
    await go("#/schedule", ".card table");
    await axe("schedule");
    await shot("schedule");
  });

  test("keyboard: tab reaches the skip link, every page link, the agent picker and logout; Enter follows a link", async () => {
    await go("#/chat", "#message");
    // A page change puts the focus on the page's content (main); Shift+Tab walks back up.
    assert.equal(await page.evaluate(() => document.activeElement.id), "main");
    const seen = [];
    const focused = () => page.evaluate(() => {
      const el = document.activeElement;
      const label = el.labels?.[0]?.textContent ?? el.getAttribute("aria-label") ?? el.textContent;
      return `${el.tagName.toLowerCase()}:${label.trim()}`;
    });
    for (let i = 0; i < 10; i++) {
      await page.keyboard.down("Shift");
      await page.keyboard.press("Tab");
      await page.keyboard.up("Shift");
      seen.push(await focused());
    }
    await page.focus(".skip");
    await page.keyboard.press("Tab");
    seen.push(await focused());
    for (const want of ["a:Skip to content", "a:Chat", "a:Workspace", "a:Usage", "a:Schedule", "button:Log out"]) {
      assert.ok(seen.includes(want), `${want} not reached by Tab: ${seen.join(" | ")}`);
    }
    assert.ok(seen.some((s) => s.startsWith("select:Agent")), `agent picker: ${seen.join(" | ")}`);
    // Back to the Usage link, and Enter opens the page.
    await page.focus('nav a[href="#/usage"]');
    await page.keyboard.press("Enter");
    await page.waitForSelector("#period");
    assert.equal(await page.evaluate(() => location.hash), "#/usage");
    assert.deepEqual(cspErrors, [], "no Content-Security-Policy violation on any page");
  });

  test("logging out ends the session", async () => {
    await page.click("#logout");
    await page.waitForSelector("#token");
    const r = await page.evaluate(async () => (await fetch("/api/agents")).status);
    assert.equal(r, 401);
  });
});
