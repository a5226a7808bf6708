// acceptsGzip against ngx_http_gzip_accept_encoding and ngx_http_gzip_quantity
// (nginx src/http/ngx_http_core_module.c): each case is what nginx's loops decide for the value.
import { expect, test } from "bun:test";
import { acceptsGzip } from "./gzip.ts";

const CASES: readonly (readonly [string, boolean])[] = [
  ["gzip", true],
  ["GZip", true],
  ["deflate, gzip", true],
  ["deflate,gzip", true],
  ["gzip, deflate", true],
  ["gzip ", true],
  // `;` then only spaces or the end: nginx's quantity loop runs out and accepts.
  ["gzip;", true],
  ["gzip; ", true],
  ["gzip;q=1", true],
  ["gzip; q=0.5", true],
  ["gzip;Q=0.001", true],
  ["gzip;q=1.000", true],
  ["gzip;q=0.5, br", true],
  ["gzip;q=0", false],
  ["gzip;q=0.000", false],
  ["gzip;q=1.5", false],
  ["gzip;q=0.0001", false],
  // a character after the quality other than `,` or a space: unreadable, 0.
  ["gzip;q=0.5x", false],
  ["gzip;q=1x", false],
  // `q` needs `=` and one more character; any other parameter declines.
  ["gzip;q=", false],
  ["gzip;q", false],
  ["gzip;q =1", false],
  ["gzip;level=1", false],
  ["gzip2", false],
  ["xgzip", false],
  // the first gzip at a token start decides, even when a later one would accept.
  ["gzip;q=0, gzip", false],
  ["*", false],
  ["identity", false],
  ["", false],
];

test.each(CASES)("Accept-Encoding %p: gzip %p", (value, accepted) => {
  expect(acceptsGzip(value)).toBe(accepted);
});
