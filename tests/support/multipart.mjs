// Reads a multipart/form-data body as the real APIs do: text fields by
// name, files with their filename, content type and bytes. `null` when the
// body is not well-formed multipart (a missing boundary, no closing line).
export function parseMultipart(contentType, raw) {
  const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType ?? "");
  if (!m) return null;
  const boundary = Buffer.from(`--${m[1] ?? m[2]}`);
  const parts = [];
  let at = raw.indexOf(boundary);
  if (at !== 0) return null;
  for (;;) {
    const start = at + boundary.length;
    if (raw.subarray(start, start + 2).toString() === "--") break;
    const next = raw.indexOf(boundary, start);
    if (next < 0) return null;
    parts.push(raw.subarray(start + 2, next - 2)); // skip CRLF after the boundary and before the next
    at = next;
  }
  const fields = {};
  const files = {};
  for (const p of parts) {
    const split = p.indexOf("\r\n\r\n");
    if (split < 0) return null;
    const head = p.subarray(0, split).toString();
    const body = p.subarray(split + 4);
    const name = /name="([^"]*)"/.exec(head)?.[1];
    if (name === undefined) return null;
    const filename = /filename="([^"]*)"/.exec(head)?.[1];
    if (filename !== undefined) {
      files[name] = { filename, contentType: /content-type:\s*([^\r\n]+)/i.exec(head)?.[1] ?? "application/octet-stream", bytes: body };
    } else {
      fields[name] = body.toString("utf8");
    }
  }
  return { fields, files };
}
