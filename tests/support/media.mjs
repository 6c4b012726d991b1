// Helpers for media tests and benches: real-looking file bytes, Telegram
// media updates, and the Session object's /status.
import { OWNER, tgUpdate } from "./hearth.mjs";

let fileCounter = 1;

/** `len` bytes that start like a JPEG (and so are sniffed as one). */
export function jpegBytes(len, seed = 7) {
  const b = Buffer.alloc(len);
  for (let i = 0; i < len; i++) b[i] = (i * 31 + seed) & 0xff;
  b.set([0xff, 0xd8, 0xff, 0xe0], 0);
  return b;
}

export function pdfBytes(len) {
  const b = Buffer.alloc(len, 0x20);
  b.write("%PDF-1.4\n", 0, "latin1");
  return b;
}

/** Registers bytes with the Telegram stand-in; returns the file_id. */
export function serveFile(h, bytes, ext = "jpg") {
  const id = `file-${fileCounter++}-${Date.now()}`;
  h.telegram.state.fileBytes.set(id, { bytes, path: `media/${id}.${ext}` });
  return id;
}

/** A photo message as Telegram sends it: several sizes, the largest last. */
export function photoUpdate(fileId, size, { from = OWNER, caption } = {}) {
  return tgUpdate({
    from,
    extra: {
      photo: [
        { file_id: fileId + "-thumb", file_unique_id: "t" + fileId, file_size: 1000, width: 90, height: 90 },
        { file_id: fileId, file_unique_id: "u" + fileId, file_size: size, width: 1280, height: 960 },
      ],
      ...(caption !== undefined ? { caption } : {}),
    },
  });
}

export function documentUpdate(fileId, { name, mime, size, from = OWNER, caption } = {}) {
  return tgUpdate({
    from,
    extra: {
      document: { file_id: fileId, file_unique_id: "u" + fileId, file_name: name, mime_type: mime, file_size: size },
      ...(caption !== undefined ? { caption } : {}),
    },
  });
}

export function voiceUpdate(fileId, size, { from = OWNER } = {}) {
  return tgUpdate({ from, extra: { voice: { file_id: fileId, file_unique_id: "u" + fileId, duration: 2, mime_type: "audio/ogg", file_size: size } } });
}

/** The Session object's /status (history, media cache counters). */
export async function sessionStatus(h, key = "agent:main:main") {
  const ns = await h.mf.getDurableObjectNamespace("SESSION");
  const r = await ns.get(ns.idFromName(key)).fetch("https://session/status");
  return r.json();
}

export async function mediaObjects(h, key = "agent:main:main") {
  const b = await h.bucket();
  const out = [];
  let cursor;
  do {
    const page = await b.list({ prefix: `media/${key}/`, cursor, include: ["httpMetadata", "customMetadata"] });
    out.push(...page.objects);
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return out;
}

/** All content blocks of an LLM request's user messages (Anthropic or OpenAI). */
export function userBlocks(req) {
  return (req.body.messages || [])
    .filter((m) => m.role === "user")
    .flatMap((m) => (typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content));
}
