// The corpus of the nginx differential suite (differential-nginx.test.ts): raw HTTP/1.x
// requests built from small tables, each a name and the exact bytes (latin1: one char, one
// byte) sent, unchanged, to a real nginx configured as ingress-nginx renders a location and to
// Portico under --ingress-nginx-compat.

export interface Case {
  readonly name: string;
  readonly bytes: string;
}

const CRLF = "\r\n";

/** A request: its line, its field lines (Host given by the caller), a body; Connection: close last. */
function req(line: string, fields: readonly string[] = ["Host: a.test"], body = ""): string {
  return line + CRLF + [...fields, "Connection: close"].map((f) => f + CRLF).join("") + CRLF + body;
}

// Request targets, each sent as `GET <target> HTTP/1.1` with Host: a.test.
const TARGETS: ReadonlyArray<readonly [string, string]> = [
  ["plain", "/"],
  ["a path", "/a/b"],
  ["dot-dot segment", "/a/../b"],
  ["dot-dot past the root", "/../b"],
  ["dot segment", "/./a"],
  ["trailing dot-dot", "/a/b/.."],
  ["encoded dot-dot", "/%2e%2e/x"],
  ["encoded dot-dot, upper case", "/a/%2E%2E/x"],
  ["encoded slash", "/a%2Fb"],
  ["repeated slashes", "//a//b"],
  ["matrix parameter", "/a;b=c"],
  ["query", "/a?b"],
  ["query with a slash and dots", "/a?x=/../y"],
  ["empty query", "/?"],
  ["lone percent", "/%"],
  ["bad escape", "/%zz"],
  ["encoded NUL", "/%00"],
  ["encoded space", "/a%20b"],
  ["unreserved escape", "/%41%7e"],
  ["reserved escape", "/a%3Fb"],
  ["raw UTF-8", "/caf\xc3\xa9"],
  ["raw invalid UTF-8", "/\xff"],
  ["backslash", "/a\\b"],
  ["fragment", "/a#frag"],
  ["fragment after query", "/a?b#frag"],
  ["asterisk in path", "/a*"],
  ["double quote", '/a"b'],
  ["angle brackets", "/<a>"],
  ["curly braces", "/{a}"],
  ["pipe and caret", "/a|b^c"],
  ["tilde", "/~user"],
  ["no leading slash", "a"],
  ["absolute-form", "http://a.test/x"],
  ["absolute-form with port", "http://a.test:80/x"],
  ["absolute-form https", "https://a.test/x"],
  ["absolute-form no path", "http://a.test"],
  ["absolute-form with dot-dot", "http://a.test/a/../b"],
  ["absolute-form with userinfo", "http://u@a.test/x"],
  ["absolute-form, other scheme", "ftp://a.test/x"],
  ["asterisk-form on GET", "*"],
  ["long path", `/${"p".repeat(4000)}`],
];

// Request lines other than `GET <target> HTTP/1.1`.
const LINES: ReadonlyArray<readonly [string, string]> = [
  ["OPTIONS *", "OPTIONS * HTTP/1.1"],
  ["OPTIONS /", "OPTIONS / HTTP/1.1"],
  ["CONNECT authority-form", "CONNECT a.test:443 HTTP/1.1"],
  ["lower-case method", "get / HTTP/1.1"],
  ["mixed-case method", "Get / HTTP/1.1"],
  ["unknown method", "FOO / HTTP/1.1"],
  ["method with a digit", "M1 / HTTP/1.1"],
  ["method with an underscore", "MY_METHOD / HTTP/1.1"],
  ["method with a dash", "MY-METHOD / HTTP/1.1"],
  ["long method (32)", `${"M".repeat(32)} / HTTP/1.1`],
  ["very long method (200)", `${"M".repeat(200)} / HTTP/1.1`],
  ["DELETE", "DELETE / HTTP/1.1"],
  ["PATCH without a body", "PATCH / HTTP/1.1"],
  ["TRACE", "TRACE / HTTP/1.1"],
  ["PROPFIND", "PROPFIND / HTTP/1.1"],
  ["HEAD", "HEAD / HTTP/1.1"],
  ["HTTP/1.0", "GET / HTTP/1.0"],
  ["HTTP/0.9 style line", "GET /"],
  ["HTTP/2.0 text", "GET / HTTP/2.0"],
  ["HTTP/1.2", "GET / HTTP/1.2"],
  ["HTTP/1.10", "GET / HTTP/1.10"],
  ["HTTP/3.0", "GET / HTTP/3.0"],
  ["lower-case version", "GET / http/1.1"],
  ["two spaces after the method", "GET  / HTTP/1.1"],
  ["two spaces before the version", "GET /  HTTP/1.1"],
  ["tab as separator", "GET\t/\tHTTP/1.1"],
  ["space in the target", "GET /a b HTTP/1.1"],
  ["trailing space", "GET / HTTP/1.1 "],
  ["no target", "GET HTTP/1.1"],
];

// Host field forms (an HTTP/1.1 GET /).
const HOSTS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ["Host with a port", ["Host: a.test:8080"]],
  ["Host with a trailing dot", ["Host: a.test."]],
  ["Host in upper case", ["Host: A.TEST"]],
  ["Host an IPv4 literal", ["Host: 127.0.0.1"]],
  ["Host an IPv6 literal", ["Host: [::1]"]],
  ["Host an IPv6 literal with a port", ["Host: [::1]:8080"]],
  ["Host an unbracketed IPv6", ["Host: ::1"]],
  ["Host empty", ["Host:"]],
  ["Host duplicated, same", ["Host: a.test", "Host: a.test"]],
  ["Host duplicated, different", ["Host: a.test", "Host: b.test"]],
  ["Host missing", []],
  ["Host with a path", ["Host: a.test/x"]],
  ["Host with userinfo", ["Host: u@a.test"]],
  ["Host with a space inside", ["Host: a .test"]],
  ["Host with an empty port", ["Host: a.test:"]],
  ["Host with a bad port", ["Host: a.test:x"]],
  ["Host with an underscore", ["Host: a_b.test"]],
  ["Host with a backslash", ["Host: a\\b.test"]],
  ["Host with a leading dot", ["Host: .a.test"]],
  ["Host with double dots", ["Host: a..test"]],
  ["Host with a high byte", ["Host: \xe9.test"]],
];

// Header field forms (an HTTP/1.1 GET / with Host: a.test first).
const FIELDS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ["underscore in a name", ["X_Under: 1"]],
  ["dot in a name", ["X.Dot: 1"]],
  ["other tchar in a name", ["X!#$%&'*+^`|~: 1"]],
  ["invalid character in a name (@)", ["X@Y: 1"]],
  ["invalid character in a name (high byte)", ["X\xe9: 1"]],
  ["space in a name", ["X Y: 1"]],
  ["space before the colon", ["X-Sp : 1"]],
  ["tab before the colon", ["X-Sp\t: 1"]],
  ["obs-fold", ["X-Fold: a", " b"]],
  ["obs-fold with a tab", ["X-Fold: a", "\tb"]],
  ["empty value", ["X-Empty:"]],
  ["value with leading and trailing spaces", ["X-Ws:   a b   "]],
  ["value with a tab inside", ["X-Tab: a\tb"]],
  ["value with a high byte", ["X-High: caf\xc3\xa9"]],
  ["value with a NUL", ["X-Nul: a\x00b"]],
  ["value with a bare CR", ["X-Cr: a\rb"]],
  ["value with DEL", ["X-Del: a\x7fb"]],
  ["field line without a colon", ["NoColon"]],
  ["empty name", [": v"]],
  ["long value (4000)", [`X-Long: ${"v".repeat(4000)}`]],
  ["very long value (9000)", [`X-Long: ${"v".repeat(9000)}`]],
  // "X-Long: " and CRLF are 10 bytes: lines of 8,192 and 8,193 bytes.
  ["field line of 8192 bytes", [`X-Long: ${"v".repeat(8182)}`]],
  ["field line of 8193 bytes", [`X-Long: ${"v".repeat(8183)}`]],
  ["field line of 8192 bytes without a space", [`X-Long:${"v".repeat(8183)}`]],
  ["one Cookie line of 9000 bytes with pairs", [`Cookie: ${Array.from({ length: 900 }, (_, i) => `c${String(i).padStart(3, "0")}=1234`).join("; ")}`]],
  ["two 5000-byte lines of one name", [`X-Rep: ${"a".repeat(5000)}`, `X-Rep: ${"b".repeat(5000)}`]],
  ["repeated Cookie", ["Cookie: a=1", "Cookie: b=2"]],
  // Four buffers of 8 KiB hold the request line and every field line (large_client_header_buffers 4 8k).
  ["four 7000-byte lines", Array.from({ length: 4 }, (_, i) => `X-B${i}: ${"v".repeat(7000)}`)],
  ["five 7000-byte lines", Array.from({ length: 5 }, (_, i) => `X-B${i}: ${"v".repeat(7000)}`)],
  ["WebSocket handshake the pod answers 200", ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]],
  ["many fields (90)", Array.from({ length: 90 }, (_, i) => `X-F${i}: ${i}`)],
  ["repeated field", ["X-Rep: 1", "X-Rep: 2"]],
  ["case of a name", ["x-lower: 1", "X-UPPER: 2"]],
  ["Upgrade without Connection: upgrade", ["Upgrade: websocket"]],
  ["Connection naming a field", ["Connection: X-Hop", "X-Hop: 1"]],
  ["Keep-Alive field", ["Keep-Alive: timeout=5"]],
  ["Proxy field (httpoxy)", ["Proxy: http://evil"]],
  ["client X-Forwarded-For", ["X-Forwarded-For: 1.2.3.4"]],
  ["client X-Forwarded-Host", ["X-Forwarded-Host: evil.test"]],
  ["client X-Forwarded-Proto", ["X-Forwarded-Proto: https"]],
  ["client X-Real-IP", ["X-Real-IP: 1.2.3.4"]],
  ["client X-Request-ID", ["X-Request-ID: abc"]],
  ["client X-Scheme", ["X-Scheme: https"]],
  ["TE: trailers", ["TE: trailers"]],
  ["Expect: 100-continue without a body", ["Expect: 100-continue"]],
  ["Expect unknown", ["Expect: foo"]],
  ["Via", ["Via: 1.1 other"]],
  ["Forwarded", ["Forwarded: for=1.2.3.4"]],
  ["Accept-Encoding", ["Accept-Encoding: gzip"]],
  ["Max-Forwards", ["Max-Forwards: 0"]],
];

// Body framing (POST / with Host: a.test first; bodies follow the head in the same write).
const FRAMING: ReadonlyArray<readonly [string, readonly string[], string]> = [
  ["Content-Length", ["Content-Length: 5"], "hello"],
  ["Content-Length 0", ["Content-Length: 0"], ""],
  ["no Content-Length, no body", [], ""],
  ["duplicate Content-Length, equal", ["Content-Length: 5", "Content-Length: 5"], "hello"],
  ["duplicate Content-Length, different", ["Content-Length: 5", "Content-Length: 6"], "hello!"],
  ["Content-Length list", ["Content-Length: 5, 5"], "hello"],
  ["Content-Length with a sign", ["Content-Length: +5"], "hello"],
  ["Content-Length negative", ["Content-Length: -1"], ""],
  ["Content-Length not a number", ["Content-Length: abc"], ""],
  ["Content-Length with leading zeros", ["Content-Length: 005"], "hello"],
  ["Content-Length over the body limit", [`Content-Length: ${1024 * 1024 + 1}`], ""],
  ["chunked", ["Transfer-Encoding: chunked"], "5\r\nhello\r\n0\r\n\r\n"],
  ["chunked, upper case", ["Transfer-Encoding: CHUNKED"], "5\r\nhello\r\n0\r\n\r\n"],
  ["chunked with an extension", ["Transfer-Encoding: chunked"], "5;ext=1\r\nhello\r\n0\r\n\r\n"],
  ["chunked with a quoted extension", ["Transfer-Encoding: chunked"], '5;ext="a b"\r\nhello\r\n0\r\n\r\n'],
  ["chunked with a trailer", ["Transfer-Encoding: chunked"], "5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n"],
  ["chunked with a bad size", ["Transfer-Encoding: chunked"], "zz\r\nhello\r\n0\r\n\r\n"],
  ["chunked with an upper-case size", ["Transfer-Encoding: chunked"], "A\r\nhellohello\r\n0\r\n\r\n"],
  ["CL and TE", ["Content-Length: 3", "Transfer-Encoding: chunked"], "5\r\nhello\r\n0\r\n\r\n"],
  ["TE gzip, chunked", ["Transfer-Encoding: gzip, chunked"], "5\r\nhello\r\n0\r\n\r\n"],
  ["TE chunked, gzip", ["Transfer-Encoding: chunked, gzip"], "5\r\nhello\r\n0\r\n\r\n"],
  ["TE identity", ["Transfer-Encoding: identity"], ""],
  ["TE unknown", ["Transfer-Encoding: foo"], ""],
  ["TE twice chunked", ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"], "5\r\nhello\r\n0\r\n\r\n"],
  ["TE chunked on HTTP/1.0", ["Transfer-Encoding: chunked"], "5\r\nhello\r\n0\r\n\r\n"],
  ["Expect: 100-continue with a body", ["Expect: 100-continue", "Content-Length: 5"], "hello"],
  ["body over the limit, chunked", ["Transfer-Encoding: chunked"], `100001\r\n${"x".repeat(0x100001)}\r\n0\r\n\r\n`],
];

// HTTP/1.0 requests.
const HTTP10: ReadonlyArray<readonly [string, readonly string[]]> = [
  ["HTTP/1.0 with Host", ["Host: a.test"]],
  ["HTTP/1.0 without Host", []],
  ["HTTP/1.0 with Connection: keep-alive", ["Host: a.test", "Connection: keep-alive"]],
];

export const CASES: readonly Case[] = [
  { name: "GET with a body", bytes: req("GET / HTTP/1.1", ["Host: a.test", "Content-Length: 5"], "hello") },
  ...TARGETS.map(([name, t]) => ({ name: `target: ${name}`, bytes: req(`GET ${t} HTTP/1.1`) })),
  { name: "absolute-form, Host differs", bytes: req("GET http://a.test/x HTTP/1.1", ["Host: b.test"]) },
  { name: "absolute-form, Host missing", bytes: req("GET http://a.test/x HTTP/1.1", []) },
  ...LINES.map(([name, line]) => ({ name: `line: ${name}`, bytes: name.startsWith("HTTP/0.9") ? `${line}\r\n` : req(line) })),
  ...HOSTS.map(([name, fields]) => ({ name: `host: ${name}`, bytes: req("GET / HTTP/1.1", fields) })),
  ...FIELDS.map(([name, fields]) => ({ name: `field: ${name}`, bytes: req("GET / HTTP/1.1", ["Host: a.test", ...fields]) })),
  ...FRAMING.map(([name, fields, body]) => ({
    name: `body: ${name}`,
    bytes: req(name.includes("HTTP/1.0") ? "POST / HTTP/1.0" : "POST / HTTP/1.1", ["Host: a.test", ...fields], body),
  })),
  ...HTTP10.map(([name, fields]) => ({ name: `1.0: ${name}`, bytes: fields.some((f) => f.startsWith("Connection")) ? "GET / HTTP/1.0\r\n" + fields.map((f) => f + CRLF).join("") + CRLF : req("GET / HTTP/1.0", fields) })),
];
