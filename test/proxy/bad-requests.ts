// Malformed HTTP/1.1 requests, as raw bytes, that every HTTP/1.1 listener must answer 400
// without the backend seeing anything: Bun.serve (validation.test.ts) and the HTTP/1.1 side
// of the HTTP/2 listener (test/http2/h1-side.test.ts).

/** A request with `Connection: close` added, so the exchange ends after one answer. */
export const req = (line: string, headers: string[] = ["Host: a.test"], body = "") =>
  `${line}\r\n${[...headers, "Connection: close"].join("\r\n")}\r\n\r\n${body}`;

export const BAD_REQUESTS: ReadonlyArray<readonly [string, string]> = [
  ["duplicate Host", req("GET / HTTP/1.1", ["Host: a.test", "Host: b.test"])],
  ["Host with userinfo", req("GET / HTTP/1.1", ["Host: user@evil.test"])],
  ["Host with bad characters", req("GET / HTTP/1.1", ["Host: a test"])],
  ["Host with slash", req("GET / HTTP/1.1", ["Host: a.test/x"])],
  ["Host with bad port", req("GET / HTTP/1.1", ["Host: a.test:99999"])],
  ["empty Host", req("GET / HTTP/1.1", ["Host: "])],
  ["missing Host on HTTP/1.1", req("GET / HTTP/1.1", [])],
  ["CONNECT", req("CONNECT a.test:443 HTTP/1.1", ["Host: a.test:443"])],
  ["NUL in header value", req("GET / HTTP/1.1", ["Host: a.test", "X-A: b\x00c"])],
  ["control char in header value", req("GET / HTTP/1.1", ["Host: a.test", "X-A: b\x01c"])],
  ["control char in header name", req("GET / HTTP/1.1", ["Host: a.test", "X\x01A: b"])],
  ["Transfer-Encoding gzip, chunked", req("POST / HTTP/1.1", ["Host: a.test", "Transfer-Encoding: gzip, chunked"], "0\r\n\r\n")],
  ["Transfer-Encoding twice", req("POST / HTTP/1.1", ["Host: a.test", "Transfer-Encoding: chunked", "Transfer-Encoding: chunked"], "0\r\n\r\n")],
  ["Transfer-Encoding with Content-Length", req("POST / HTTP/1.1", ["Host: a.test", "Transfer-Encoding: chunked", "Content-Length: 5"], "0\r\n\r\n")],
  ["Transfer-Encoding identity", req("POST / HTTP/1.1", ["Host: a.test", "Transfer-Encoding: identity"], "")],
  // RFC 9112 §6.1: faulty framing; nginx 400 (ngx_http_process_request_header).
  ["Transfer-Encoding on HTTP/1.0", req("POST / HTTP/1.0", ["Host: a.test", "Transfer-Encoding: chunked"], "5\r\nhello\r\n0\r\n\r\n")],
  ["path %2F", req("GET /a%2Fb HTTP/1.1")],
  ["path %2f lower case", req("GET /a%2fb HTTP/1.1")],
  ["path %5C", req("GET /a%5Cb HTTP/1.1")],
  ["path %5c lower case", req("GET /a%5cb HTTP/1.1")],
  ["path %00", req("GET /a%00 HTTP/1.1")],
  ["path bad escape", req("GET /a%zz HTTP/1.1")],
  ["fragment in target", req("GET /a#b HTTP/1.1")],
  ["asterisk-form GET", req("GET * HTTP/1.1")],
];

