// The HTTP/1.1 backend the split-port tests share (tls-split.test.ts, h2c-grpc.test.ts): it
// answers with the X-Forwarded-For it was sent, so a test sees which client address the proxy
// relayed, and it holds slow.test's requests so a test can keep one in flight across a change.
import { rawBackend, type RawBackend, type RawRequest } from "../proxy/raw.ts";

/** Answers 200 with the request's X-Forwarded-For ("none" without one); slow.test's requests go to `held`, unanswered. */
export function xffBackend(held: RawRequest[]): Promise<RawBackend> {
  return rawBackend((req) => {
    if (/\r\nhost: slow\.test/i.test(req.head)) {
      held.push(req);
      return null;
    }
    const xff = /\r\nx-forwarded-for: ([^\r]*)/i.exec(req.head)?.[1] ?? "none";
    return `HTTP/1.1 200 OK\r\ncontent-length: ${xff.length}\r\n\r\n${xff}`;
  });
}
