import { expect, test } from "bun:test";
import { ProxyError } from "../../http/errors.ts";
import { validateRequest } from "./validate.ts";

function req(url: string, headers: Record<string, string>, method = "GET"): Request {
  return new Request(url, { method, headers });
}
/** A request as Bun builds it: url authority from Host (or a placeholder when Host is unusable). */
function hostReq(host: string): Request {
  let url = "http://placeholder.invalid/p";
  try {
    url = new URL(`http://${host}/p`).href;
  } catch {}
  return req(url, { host });
}

test("host forms: name, port, IPv4, IPv6 literal, trailing dot, case", () => {
  const ok = (host: string) => validateRequest(hostReq(host));
  expect(ok("A.Example.COM:8080")).toMatchObject({ hostname: "a.example.com", port: "8080", host: "A.Example.COM:8080" });
  expect(ok("10.0.0.1")).toMatchObject({ hostname: "10.0.0.1", port: null });
  expect(ok("[::1]:443")).toMatchObject({ hostname: "[::1]", port: "443" });
  expect(ok("foo.com.")).toMatchObject({ hostname: "foo.com" });
  expect(ok("under_score.test")).toMatchObject({ hostname: "under_score.test" });
});

test("bad hosts are 400", () => {
  for (const host of ["", "a b", "u@h", "a,b", "h:0x1", "h:70000", "[zz::1]", "-.test", "a..b", "é.test", "h/x"]) {
    const v = validateRequest(hostReq(host));
    expect(v).toBeInstanceOf(ProxyError);
  }
});

test("Transfer-Encoding and Content-Length rules", () => {
  expect(validateRequest(req("http://h/p", { host: "h", "transfer-encoding": "chunked" }, "POST"))).not.toBeInstanceOf(ProxyError);
  expect(validateRequest(req("http://h/p", { host: "h", "transfer-encoding": "gzip" }, "POST"))).toBeInstanceOf(ProxyError);
  expect(validateRequest(req("http://h/p", { host: "h", "content-length": "1, 2" }, "POST"))).toBeInstanceOf(ProxyError);
});

test("absolute-form authority must match Host", () => {
  expect(validateRequest(req("http://other.test/p", { host: "a.test" }))).toBeInstanceOf(ProxyError);
  expect(validateRequest(req("http://a.test/p", { host: "a.test:80" }))).not.toBeInstanceOf(ProxyError);
});
