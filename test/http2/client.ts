// A node:http2 client that answers like fetch(): one request on a kept session, returned as a
// web Response, so a suite written against fetch() can run its cases over HTTP/2 unchanged.
import http2 from "node:http2";

/** One node:http2 client session to the listener (ALPN h2, certificate not verified). */
export function h2Session(port: number, servername = "localhost"): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const s = http2.connect(`https://127.0.0.1:${port}`, { rejectUnauthorized: false, servername });
    s.once("connect", () => resolve(s));
    s.once("error", reject);
    // A GOAWAY with an error code makes node:http2 emit 'error' on the session later too.
    s.on("error", () => {});
  });
}

/** fetch(path, init) over `session`: the Host header becomes :authority (RFC 9113 §8.3.1). */
export async function h2Fetch(session: http2.ClientHttp2Session, path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Response> {
  const headers: http2.OutgoingHttpHeaders = { ":method": init.method ?? "GET", ":path": path };
  for (const [k, v] of Object.entries(init.headers ?? {})) {
    if (k.toLowerCase() === "host") headers[":authority"] = v;
    else headers[k.toLowerCase()] = v;
  }
  return await new Promise<Response>((resolve, reject) => {
    const req = session.request(headers, { endStream: init.body === undefined });
    const chunks: Buffer[] = [];
    let got: http2.IncomingHttpHeaders | null = null;
    req.on("response", (h) => { got = h; });
    req.on("data", (d: Buffer) => chunks.push(d));
    req.on("error", reject);
    req.on("close", () => {
      if (got === null) return reject(new Error(`stream closed without a response (rst ${req.rstCode})`));
      const status = Number(got[":status"]);
      const out = new Headers();
      for (const [k, v] of Object.entries(got)) {
        if (k.startsWith(":") || v === undefined) continue;
        for (const x of Array.isArray(v) ? v : [String(v)]) out.append(k, x);
      }
      const body = Buffer.concat(chunks);
      const nullBody = status === 204 || status === 304 || body.byteLength === 0;
      resolve(new Response(nullBody ? null : body, { status, headers: out }));
    });
    if (init.body !== undefined) req.end(init.body);
  });
}
