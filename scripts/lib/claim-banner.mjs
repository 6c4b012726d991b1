// `npm run dev`'s claim line: once Hearth answers, asks it (with the
// ADMIN_TOKEN of .dev.vars) whether agent `main` has an owner; when it has
// none, prints the one-time claim code and how to send it (on Telegram, the
// deep link that sends /start CODE). Runs beside wrangler dev, prints once,
// and gives up quietly after two minutes.
// Usage: node scripts/lib/claim-banner.mjs <host> <port>
import fs from "node:fs";

const [host = "127.0.0.1", port = "8787"] = process.argv.slice(2);
const base = `http://${host}:${port}`;
const vars = fs.existsSync(".dev.vars") ? fs.readFileSync(".dev.vars", "utf8") : "";
const setting = (name) => vars.match(new RegExp(`^${name}=(.*)$`, "m"))?.[1]?.trim().replace(/^"(.*)"$/, "$1");
const token = setting("ADMIN_TOKEN");
if (!token) process.exit(0);

const deadline = Date.now() + 120_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
while (Date.now() < deadline) {
  const people = await fetch(`${base}/api/agents/main/people`, { headers: { authorization: `Bearer ${token}` } })
    .then((r) => (r.ok ? r.json() : null))
    .then((reply) => reply && (reply.list ?? {}))
    .catch(() => null);
  if (people) {
    if (!people.claim) process.exit(0);
    let link = "";
    const bot = setting("TELEGRAM_BOT_TOKEN");
    if (bot) {
      const api = setting("TELEGRAM_API_BASE") || "https://api.telegram.org";
      const me = await fetch(`${api}/bot${bot}/getMe`).then((r) => r.json()).catch(() => null);
      if (me?.result?.username) link = `\n  On Telegram, one tap: https://t.me/${me.result.username}?start=${people.claim}`;
    }
    console.log(`\n  No owner yet. Claim this agent: send  /claim ${people.claim}  to your bot (any channel).${link}\n  (The console's People page shows the code too; OWNER_IDS, when set, wins.)\n`);
    process.exit(0);
  }
  await sleep(1000);
}
