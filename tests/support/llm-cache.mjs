// Prompt caching as the LLM providers do it, for the LLM stand-in's usage
// numbers (cache reads and writes of a request's prefix).
import { createHash } from "node:crypto";

/** Tokens of a text, as the stand-in counts them: 4 characters each. */
export const tokensOf = (s) => Math.ceil(s.length / 4);

/** Anthropic's tokens around the blocks (role markers), never cached. */
const FRAMING_TOKENS = 4;

/** A breakpoint's lifetime in ms: `ttl` "1h" or "5m" (the default). */
const ONE_HOUR_MS = 60 * 60_000;
const breakpointTtl = (block, fiveMinutesMs) => (block?.cache_control?.ttl === "1h" ? ONE_HOUR_MS : fiveMinutesMs);

/** A content block without its cache marker, as the prefix match sees it. */
function plainJson(block) {
  if (block && typeof block === "object" && "cache_control" in block) {
    const { cache_control, ...rest } = block;
    return JSON.stringify(rest);
  }
  return JSON.stringify(block);
}

/**
 * Prompt caching as the providers do it, for the stand-in's usage numbers.
 *
 * Anthropic (https://docs.claude.com/en/docs/build-with-claude/prompt-caching):
 * the prefix is tools, then system, then messages, block by block. A block
 * with `cache_control` is a breakpoint: the prefix ending there is written
 * to the cache (when it has at least `minTokens`), and a request reads the
 * longest cached prefix that ends at a block within 20 blocks before one of
 * its breakpoints. Tokens from there to the last breakpoint are written
 * (`cache_creation_input_tokens`), the rest are `input_tokens`.
 *
 * Lifetimes: a breakpoint's `cache_control.ttl` is "5m" (the default) or
 * "1h". A hit refreshes the entry for its own lifetime. Writes are billed
 * by Anthropic's rule for mixed lifetimes ("Mixing different TTLs"): A is
 * the prefix read, B the end of the last 1-hour breakpoint after A, C the
 * last breakpoint; B − A tokens are 1-hour writes, C − B 5-minute writes,
 * reported apart in `cache_creation` (`ephemeral_1h_input_tokens`,
 * `ephemeral_5m_input_tokens`). A request without the
 * `extended-cache-ttl-2025-04-11` beta flag gets 5-minute entries for its
 * 1-hour breakpoints, without an error (as reported for the real API:
 * griffinwork40/agent-afk#757).
 *
 * OpenAI (https://platform.openai.com/docs/guides/prompt-caching): no
 * markers; a prompt of 1024 tokens or more reads the longest prefix it
 * shares with a recent request, in steps of 128 tokens (`cached_tokens`,
 * part of `prompt_tokens`); nothing is billed as a write.
 *
 * Entries live `ttlMs` (5 minutes, refreshed by each hit) unless asked for
 * an hour. Anthropic bills a few framing tokens outside any block as input
 * (`FRAMING_TOKENS`).
 */
export function promptCache({ ttlMs = 5 * 60_000, minTokens = 1024 } = {}) {
  const anthropic = new Map(); // prefix hash -> {expires, lifeMs}
  const openai = []; // recent prompts: {chunks, expires}
  const alive = (expires, now) => expires > now;
  return {
    clear() {
      anthropic.clear();
      openai.length = 0;
    },
    anthropic(body, now = Date.now(), { extendedTtl = true } = {}) {
      const blocks = [];
      const life = (b) => (extendedTtl ? breakpointTtl(b, ttlMs) : ttlMs);
      for (const t of body.tools ?? []) blocks.push({ json: plainJson(t), bp: !!t?.cache_control, life: life(t) });
      const system = typeof body.system === "string" ? [{ type: "text", text: body.system }] : body.system ?? [];
      for (const s of system) blocks.push({ json: plainJson(s), bp: !!s?.cache_control, life: life(s) });
      for (const m of body.messages ?? []) {
        const content = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content ?? [];
        content.forEach((b, j) => blocks.push({ json: (j === 0 ? m.role + ":" : "") + plainJson(b), bp: !!b?.cache_control, life: life(b) }));
      }
      // Prefix identity and size at each block boundary.
      let h = createHash("sha256").update(String(body.model)).digest("hex");
      let total = 0;
      const hashes = [];
      const cum = [];
      for (const b of blocks) {
        h = createHash("sha256").update(h).update(b.json).digest("hex");
        total += tokensOf(b.json);
        hashes.push(h);
        cum.push(total);
      }
      const breakpoints = blocks.flatMap((b, i) => (b.bp ? [i] : []));
      let read = 0;
      for (const bp of breakpoints) {
        for (let j = bp; j >= 0 && j >= bp - 19; j--) {
          const entry = anthropic.get(hashes[j]);
          if (entry !== undefined && alive(entry.expires, now)) {
            if (cum[j] > read) read = cum[j];
            entry.expires = now + entry.lifeMs;
            break;
          }
        }
      }
      const last = breakpoints.length ? breakpoints[breakpoints.length - 1] : -1;
      const cacheable = last >= 0 && cum[last] >= minTokens;
      // B: the end of the last 1-hour breakpoint past what was read.
      let hourEnd = read;
      for (const bp of breakpoints) if (blocks[bp].life > ttlMs && cum[bp] >= minTokens && cum[bp] > hourEnd) hourEnd = cum[bp];
      const write1h = hourEnd - read;
      const write5m = cacheable && cum[last] > hourEnd ? cum[last] - hourEnd : 0;
      for (const bp of breakpoints) {
        if (cum[bp] < minTokens) continue;
        const had = anthropic.get(hashes[bp]);
        const lifeMs = had && alive(had.expires, now) ? Math.max(had.lifeMs, blocks[bp].life) : blocks[bp].life;
        anthropic.set(hashes[bp], { expires: now + lifeMs, lifeMs });
      }
      const write = write1h + write5m;
      return { input: total - read - write + FRAMING_TOKENS, cacheRead: read, cacheWrite: write, cacheWrite1h: write1h, cacheWrite5m: write5m, prompt: total + FRAMING_TOKENS };
    },
    openai(body, now = Date.now()) {
      const chunks = [String(body.model), JSON.stringify(body.tools ?? []), ...(body.messages ?? []).map((m) => JSON.stringify(m))];
      const prompt = chunks.reduce((n, c) => n + c.length, 0);
      let best = 0;
      for (const prev of openai) {
        if (!alive(prev.expires, now)) continue;
        let chars = 0;
        let i = 0;
        while (i < chunks.length && i < prev.chunks.length && chunks[i] === prev.chunks[i]) chars += chunks[i++].length;
        if (i < chunks.length && i < prev.chunks.length) {
          const a = chunks[i];
          const b = prev.chunks[i];
          let k = 0;
          while (k < a.length && k < b.length && a.charCodeAt(k) === b.charCodeAt(k)) k++;
          chars += k;
        }
        if (chars > best) best = chars;
      }
      const total = Math.ceil(prompt / 4);
      const shared = Math.floor(best / 4);
      const cached = total >= minTokens && shared >= minTokens ? Math.min(total, Math.floor(shared / 128) * 128) : 0;
      openai.unshift({ chunks, expires: now + ttlMs });
      if (openai.length > 16) openai.length = 16;
      return { input: total - cached, cacheRead: cached, cacheWrite: 0, prompt: total };
    },
  };
}
