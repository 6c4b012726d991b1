// Benchmark: time from a signed Discord `/ask` request to Hearth's deferred
// response (type 5), in Miniflare with the built worker. Discord allows 3 s.
//
//   import { benchDiscordDeferred } from "./bench/discord.mjs";
//   const { p50, p99 } = await benchDiscordDeferred({ n: 200 });
// or run it: `node bench/discord.mjs [n]` (prints JSON).
import { fileURLToPath } from "node:url";
import { startHearth } from "../tests/support/hearth.mjs";
import { discordKeys, snowflake, startDiscord } from "../tests/support/discord.mjs";

const OWNER = "100000000000000001";

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/**
 * Sends `n` signed `/ask` interactions one after another (after `warmup`
 * unmeasured ones) and returns the request → deferred-response times in ms.
 * The turns run in the background as in production (LLM and Discord stand-ins).
 */
export async function benchDiscordDeferred({ n = 200, warmup = 5 } = {}) {
  const discord = await startDiscord();
  const keys = discordKeys();
  const h = await startHearth({
    bindings: {
      DISCORD_PUBLIC_KEY: keys.publicHex,
      DISCORD_APPLICATION_ID: discord.appId,
      DISCORD_BOT_TOKEN: discord.botToken,
      DISCORD_API_BASE: discord.base,
      OWNER_IDS: `discord:${OWNER}`,
      ALLOW_FROM: "",
    },
  });
  const times = [];
  try {
    for (let k = 0; k < warmup + n; k++) {
      const id = snowflake();
      const user = { id: OWNER, username: "olga", global_name: "Olga", discriminator: "0", avatar: null };
      const body = JSON.stringify({
        id,
        application_id: discord.appId,
        type: 2,
        token: `tok-${id}`,
        version: 1,
        locale: "en-US",
        channel_id: "400000000000000001",
        channel: { id: "400000000000000001", type: 1 },
        user,
        context: 1,
        data: { id: "1250000000000000001", name: "ask", type: 1, options: [{ name: "prompt", type: 3, value: `question ${k}` }] },
      });
      const headers = { "content-type": "application/json", ...keys.sign(body) };
      const t0 = performance.now();
      const res = await h.mf.dispatchFetch("http://hearth.test/discord/main", { method: "POST", headers, body });
      const json = await res.json();
      const ms = performance.now() - t0;
      if (json.type !== 5) throw new Error(`expected a deferred response, got ${res.status} ${JSON.stringify(json)}`);
      if (k >= warmup) times.push(ms);
    }
    const sorted = [...times].sort((a, b) => a - b);
    const round = (x) => Math.round(x * 100) / 100;
    return { n: times.length, p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), max: round(sorted[sorted.length - 1]) };
  } finally {
    await h.close();
    await discord.close();
  }
}

/** `npm run bench` row. */
export async function bench() {
  const r = await benchDiscordDeferred({ n: 200 });
  return [{ name: `Discord /ask → deferred response (n=${r.n})`, value: `p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms`, target: "< 3 s" }];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const n = Number(process.argv[2] || 200);
  console.log(JSON.stringify(await benchDiscordDeferred({ n })));
}
