// A RequestMirror copy carries the fields the backend gets (HTTPRequestMirrorFilter: "the
// request is mirrored"; docs/design.md "Gateway API"), X-Forwarded-For included: behind a
// trusted proxy that is the client address alone, as nginx.tmpl's `X-Forwarded-For
// $remote_addr`, unless compute-full-forwarded-for appends the peer to the received list
// (`$full_x_forwarded_for`). The copy goes to a real Bun.serve on 127.0.0.1 that records the
// field it received.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { GATEWAY_MIRROR } from "../../src/kinds/forwarding.ts";
import type { PolicyFlow } from "../../src/kinds/types.ts";
import { eventually } from "../wait.ts";
import { policyCaps } from "../../src/proxy/policies/caps.ts";
import { testConfig } from "../proxy/helpers.ts";

let mirror: ReturnType<typeof Bun.serve>;
const seen = new Map<string, string | null>();

beforeAll(() => {
  mirror = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const url = new URL(req.url);
      seen.set(url.pathname, req.headers.get("x-forwarded-for"));
      return new Response("mirror\n");
    },
  });
});

afterAll(() => mirror.stop(true));

/** The fields the mirror step reads of a request that came through a trusted proxy at 127.0.0.9. */
function flowFrom(path: string, appendForwardedFor: boolean, hasBody = false): PolicyFlow {
  return {
    req: new Request(`http://mirror.test${path}`, { headers: { "x-forwarded-for": "203.0.113.7" } }),
    hasBody,
    pathAndQuery: path,
    clientIp: "203.0.113.7",
    peer: "127.0.0.9",
    trusted: true,
    appendForwardedFor,
    scheme: "http",
    host: "mirror.test",
    port: null,
    requestId: "0123456789abcdef0123456789abcdef",
    underscores: false,
    removeHeaders: null,
    upstreamHost: null,
    upstreamRequestHeaders: null,
  } as unknown as PolicyFlow;
}

test("a mirror copy's X-Forwarded-For is the backend's: the client address, or the list plus the peer with compute-full-forwarded-for", async () => {
  const step = GATEWAY_MIRROR.build({ endpoints: [`127.0.0.1:${mirror.port}`], percent: 100 }, policyCaps(testConfig()));
  expect(await step(flowFrom("/client-only", false))).toBeNull();
  expect(await step(flowFrom("/full", true))).toBeNull();
  await eventually(() => seen.has("/client-only") && seen.has("/full"), 10_000, "both copies at the mirror");
  expect(seen.get("/client-only")).toBe("203.0.113.7");
  expect(seen.get("/full")).toBe("203.0.113.7, 127.0.0.9");
});

test("a request with a body the headers do not announce (HTTP/2 may send one without Content-Length) is not mirrored", async () => {
  // What the request context decides (pipeline/context.ts hasBody) is what the mirror reads: a
  // copy would go out as a POST without its body.
  const step = GATEWAY_MIRROR.build({ endpoints: [`127.0.0.1:${mirror.port}`], percent: 100 }, policyCaps(testConfig()));
  expect(await step(flowFrom("/with-body", false, true))).toBeNull();
  expect(await step(flowFrom("/after", false))).toBeNull();
  // Copies go out in order on one loop turn each; once the later one has arrived, the earlier
  // one would have too.
  await eventually(() => seen.has("/after"), 10_000, "the copy of the request without a body");
  expect(seen.has("/with-body")).toBe(false);
});
