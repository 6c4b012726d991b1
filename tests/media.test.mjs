// Media end to end, in workerd: Telegram attachments fetched with getFile from
// the stand-in, stored in R2, referenced from the history and hydrated into
// the LLM requests; oversize refusals; the in-object cache; transcription.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import { FRIEND, OWNER, startHearth, tgUpdate } from "./support/hearth.mjs";
import {
  documentUpdate, jpegBytes, mediaObjects, pdfBytes, photoUpdate, serveFile, sessionStatus, userBlocks, voiceUpdate,
} from "./support/media.mjs";

const MAIN = "agent:main:main";
const FRIEND_KEY = `agent:main:telegram:dm:${FRIEND}`;
let h;
let dir;
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "hearth-media-"));
  h = await startHearth({
    persist: dir,
    bindings: ({ llm }) => ({ TRANSCRIBE_BASE_URL: `${llm.base}/v1` }),
  });
});
after(async () => {
  await h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => h.reset());

const sentTo = (chatId) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chatId);
const lastRequest = () => h.llm.requests[h.llm.requests.length - 1];

describe("media", () => {
  test("a photo is stored in R2 with its key, type and metadata, and the LLM sees its exact bytes", async () => {
    const bytes = jpegBytes(150_000);
    const id = serveFile(h, bytes);
    const before = Date.now();
    await h.sendUpdate(photoUpdate(id, bytes.length, { caption: "what is in this picture?" }));
    await h.until(() => sentTo(OWNER).length === 1, { what: "reply" });

    // Telegram: getFile on the largest size, then the file URL.
    assert.deepEqual(h.telegram.calls("getFile").map((r) => r.body.file_id), [id]);
    assert.equal(h.telegram.calls("file").length, 1);

    const objects = await mediaObjects(h, MAIN);
    assert.equal(objects.length, 1);
    const obj = objects[0];
    assert.match(obj.key, /^media\/agent:main:main\/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}\.jpg$/);
    assert.equal(obj.size, bytes.length);
    assert.equal(obj.httpMetadata.contentType, "image/jpeg");
    assert.equal(obj.customMetadata.sessionKey, MAIN);
    assert.equal(obj.customMetadata.originalFilename, "");
    const uploadedAt = Number(obj.customMetadata.uploadedAt);
    assert.ok(uploadedAt >= before && uploadedAt <= Date.now(), `uploadedAt ${obj.customMetadata.uploadedAt}`);
    const stored = Buffer.from(await (await (await h.bucket()).get(obj.key)).arrayBuffer());
    assert.ok(stored.equals(bytes), "stored bytes differ");

    const blocks = userBlocks(lastRequest());
    const image = blocks.find((b) => b.type === "image");
    assert.ok(image, "the LLM request has an image block");
    assert.equal(image.source.type, "base64");
    assert.equal(image.source.media_type, "image/jpeg");
    assert.ok(Buffer.from(image.source.data, "base64").equals(bytes), "decoded image bytes differ from the original");
    assert.ok(blocks.some((b) => b.type === "text" && b.text === "what is in this picture?"));

    // The history holds a reference, not the bytes.
    const status = await sessionStatus(h, MAIN);
    const raw = JSON.stringify(status.messages);
    assert.ok(raw.includes(`"r2Key":"${obj.key}"`), "reference in history");
    assert.ok(!raw.includes(bytes.toString("base64").slice(0, 200)), "base64 in history");
  });

  test("a screenshot and a PDF sent as files reach Anthropic as an image and a document block", async () => {
    const shot = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(5000, 3)]);
    const pdf = pdfBytes(40_000);
    const shotId = serveFile(h, shot, "png");
    const pdfId = serveFile(h, pdf, "pdf");
    await h.sendUpdate(documentUpdate(shotId, { name: "screen.png", mime: "image/png", size: shot.length }));
    await h.until(() => sentTo(OWNER).length === 1, { what: "reply to the screenshot" });
    let blocks = userBlocks(lastRequest());
    assert.ok(blocks.some((b) => b.type === "image" && b.source.media_type === "image/png" && Buffer.from(b.source.data, "base64").equals(shot)));

    await h.sendUpdate(documentUpdate(pdfId, { name: "report.pdf", mime: "application/pdf", size: pdf.length, caption: "summarise" }));
    await h.until(() => sentTo(OWNER).length === 2, { what: "reply to the PDF" });
    blocks = userBlocks(lastRequest());
    const doc = blocks.find((b) => b.type === "document");
    assert.ok(doc, "document block");
    assert.equal(doc.source.media_type, "application/pdf");
    assert.ok(Buffer.from(doc.source.data, "base64").equals(pdf));
    const objects = await mediaObjects(h, MAIN);
    const pdfObj = objects.find((o) => o.key.endsWith(".pdf"));
    assert.ok(pdfObj, "pdf stored with extension pdf");
    assert.equal(pdfObj.httpMetadata.contentType, "application/pdf");
    assert.equal(pdfObj.customMetadata.originalFilename, "report.pdf");
    assert.ok(objects.some((o) => o.key.endsWith(".png") && o.customMetadata.originalFilename === "screen.png"));
  });

  test("an oversize file is refused with a message, nothing is stored or downloaded, and the text still gets its turn", async () => {
    const countBefore = (await mediaObjects(h, MAIN)).length;
    const id = "huge-video";
    await h.sendUpdate(documentUpdate(id, { name: "holiday.mp4", mime: "video/mp4", size: 21 * 1024 * 1024, caption: "look at this video" }));
    await h.until(() => sentTo(OWNER).length === 2, { what: "notice and reply" });
    const [notice, reply] = sentTo(OWNER).map((r) => r.body.text);
    assert.match(notice, /too large/);
    assert.match(notice, /holiday\.mp4/);
    assert.match(notice, /21\.0 MB/);
    assert.equal(reply, "echo: look at this video");
    assert.equal(h.telegram.calls("getFile").length, 0, "no getFile for an oversize file");
    assert.equal(h.telegram.calls("file").length, 0, "no download");
    assert.equal((await mediaObjects(h, MAIN)).length, countBefore, "nothing stored");
    assert.ok(userBlocks(lastRequest()).some((b) => b.type === "text" && /too large to keep/.test(b.text)));
  });

  test("two LLM calls over the same image read R2 once", async () => {
    const bytes = jpegBytes(80_000, 3);
    const id = serveFile(h, bytes);
    const read = { name: "read_file", input: { path: "SOUL.md" } };
    h.llm.push({ toolCall: read }, { text: "seen it" });
    await h.sendUpdate(photoUpdate(id, bytes.length, { from: FRIEND, caption: "remember this" }));
    await h.until(() => sentTo(FRIEND).length === 1, { what: "reply" });
    assert.equal(h.llm.requests.length, 2);
    let s = await sessionStatus(h, FRIEND_KEY);
    // Just uploaded: both calls are served from memory.
    assert.deepEqual([s.media.r2Reads, s.media.cacheHits], [0, 2]);

    // A cold object (restart: the in-memory cache is gone, R2 and SQLite stay).
    await h.restart({ settle: ["agent:main:telegram:dm:777"] });
    h.reset();
    h.llm.push({ toolCall: read }, { text: "still seen" });
    await h.sendUpdate(tgUpdate({ from: FRIEND, text: "what was in the photo?" }));
    await h.until(() => sentTo(FRIEND).length === 1, { what: "reply after restart" });
    assert.equal(h.llm.requests.length, 2);
    for (const req of h.llm.requests) {
      const img = userBlocks(req).find((b) => b.type === "image");
      assert.ok(img && Buffer.from(img.source.data, "base64").equals(bytes), "each call carries the image");
    }
    s = await sessionStatus(h, FRIEND_KEY);
    assert.deepEqual([s.media.r2Reads, s.media.cacheHits], [1, 1], JSON.stringify(s.media));
    assert.equal(s.media.cachedBytes, bytes.length);
  });

  test("a voice note is stored, transcribed by the endpoint, and the transcript kept in the history", async () => {
    const ogg = Buffer.concat([Buffer.from("OggS"), Buffer.alloc(3000, 9)]);
    const id = serveFile(h, ogg, "oga");
    h.llm.state.transcript = "remind me to water the plants";
    await h.sendUpdate(voiceUpdate(id, ogg.length));
    await h.until(() => sentTo(OWNER).length === 1, { what: "reply" });

    assert.equal(h.llm.state.transcriptions.length, 1);
    const t = h.llm.state.transcriptions[0];
    assert.equal(t.headers.authorization, "Bearer test-llm-key");
    const form = await new Response(t.raw, { headers: { "content-type": t.headers["content-type"] } }).formData();
    assert.equal(form.get("model"), "whisper-1");
    const file = form.get("file");
    assert.match(file.name, /\.ogg$/);
    assert.ok(Buffer.from(await file.arrayBuffer()).equals(ogg), "uploaded audio differs");

    const obj = (await mediaObjects(h, MAIN)).find((o) => o.key.endsWith(".ogg"));
    assert.ok(obj, "voice stored");
    assert.equal(obj.httpMetadata.contentType, "audio/ogg");
    const status = await sessionStatus(h, MAIN);
    const last = status.messages.filter((m) => m.role === "user").pop();
    assert.ok(last.content.some((b) => b.type === "file" && b.r2Key === obj.key && b.mimeType === "audio/ogg"));
    assert.ok(last.content.some((b) => b.type === "text" && b.text.includes("remind me to water the plants")));
    assert.equal(sentTo(OWNER)[0].body.text.includes("remind me to water the plants"), true, "the model read the transcript");
  });

  test("an album (three photos, one media_group_id, sent at once) is one turn with the three images", async () => {
    const group = `album-${Date.now()}`;
    const stored = (await mediaObjects(h, FRIEND_KEY)).length;
    const ids = [0, 1, 2].map((i) => serveFile(h, jpegBytes(20_000 + i, i)));
    const updates = ids.map((id, i) => {
      const u = photoUpdate(id, 20_000 + i, { from: FRIEND, ...(i === 0 ? { caption: "our trip" } : {}) });
      u.message.media_group_id = group;
      return u;
    });
    h.llm.push({ text: "Three lovely pictures." });
    // Telegram's parallel connections: they arrive together, out of order.
    const answers = await Promise.all([updates[1], updates[0], updates[2]].map((u) => h.sendUpdate(u)));
    assert.deepEqual(answers.map((r) => r.status), [200, 200, 200]);
    await h.until(() => sentTo(FRIEND).length === 1, { what: "the one answer" });
    await h.settle(FRIEND_KEY);
    assert.equal(h.llm.requests.length, 1, "one LLM call for the album");
    assert.equal((await mediaObjects(h, FRIEND_KEY)).length, stored + 3, "each photo stored once");
    // The last user message is the album: its three pictures and the caption.
    const album = lastRequest().body.messages.filter((m) => m.role === "user").at(-1).content;
    assert.equal(album.filter((b) => b.type === "image").length, 3);
    assert.ok(album.some((b) => b.type === "text" && b.text.includes("our trip")));
    assert.deepEqual(sentTo(FRIEND).map((r) => r.body.text), ["Three lovely pictures."]);
  });
});
